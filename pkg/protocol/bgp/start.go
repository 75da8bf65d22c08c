package bgp

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	speaker "github.com/metal-ccm/metal-ccm/pkg/bgp"
)

// startAfterSync starts sp once ann has put its first complete view in it,
// and runs it until Stop; it returns at once if ctx ends before.
//
// The sessions open with every path already in the speaker, so the
// End-of-RIB that follows the first UPDATEs means "everything": a router
// that kept a restarted speaker's routes under graceful restart deletes the
// stale ones at that End-of-RIB, and would otherwise delete, for a moment,
// every route the speaker had not been given yet (at 10,000 Services, most
// of them). The sessions must outlive ctx: only Stop ends them.
func startAfterSync(ctx context.Context, sp *speaker.Speaker, ann *announcer.Announcer, logger logr.Logger) {
	if !ann.WaitSynced(ctx) {
		return
	}
	if err := sp.Start(klog.NewContext(context.WithoutCancel(ctx), logger)); err != nil {
		logger.Error(err, "BGP speaker stopped")
	}
}
