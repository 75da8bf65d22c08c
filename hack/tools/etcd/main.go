// Command etcd is the etcd server, built from the pinned module so that the
// local control plane and the integration tests use a known version.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
