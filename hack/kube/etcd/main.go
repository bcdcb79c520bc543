// Command etcd is the etcd server built from the pinned go.etcd.io/etcd/server/v3
// module; the upstream binary's entry point lives in a module with local replace
// directives, which `go build` from a proxy download cannot follow.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
