// Command kube-controller-manager runs Kubernetes' built-in controllers
// (deployments, replica sets, resource claims, garbage collection, namespaces).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
)

func main() {
	os.Exit(cli.Run(app.NewControllerManagerCommand()))
}
