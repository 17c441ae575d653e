// Command kube-apiserver is Kubernetes' API server, built from k8s.io/kubernetes
// as a dependency (the module replaces its staging modules with local paths,
// so it cannot be installed directly).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

func main() {
	os.Exit(cli.Run(app.NewAPIServerCommand()))
}
