// Command etcd runs etcd's own server entry point. It exists because the
// server module carries replace directives, so `go install` refuses it; as a
// dependency of this module those replaces do not apply.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
