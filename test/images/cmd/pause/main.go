// Command pause is the pod sandbox image of the tests' real nodes
// (containerd's sandbox_image): it holds the pod's namespaces by staying
// alive, and exits 0 on SIGTERM or SIGINT.
//
// Unlike the upstream pause it reaps no zombies, so it is no init for pods
// with shareProcessNamespace. The signal handler matters: as PID 1 of its PID
// namespace it would otherwise never see SIGTERM, and every stop would wait
// for SIGKILL.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}
