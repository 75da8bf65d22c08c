package member

import (
	"bytes"
	"log"
	"net/netip"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/memberlist"
	"k8s.io/klog/v2"
)

// metaDelegate gives memberlist this member's metadata, which SetFitness
// changes; the membership carries no messages or state of its own.
type metaDelegate struct{ md atomic.Pointer[[]byte] }

func newMetaDelegate(md []byte) *metaDelegate {
	d := &metaDelegate{}
	d.set(md)
	return d
}

func (d *metaDelegate) set(md []byte) { d.md.Store(&md) }

func (d *metaDelegate) NodeMeta(limit int) []byte {
	md := *d.md.Load()
	if len(md) > limit { // encode checked it against MetaMaxSize; memberlist would panic
		return nil
	}
	return md
}
func (*metaDelegate) NotifyMsg([]byte)                  {}
func (*metaDelegate) GetBroadcasts(_, _ int) [][]byte   { return nil }
func (*metaDelegate) LocalState(bool) []byte            { return nil }
func (*metaDelegate) MergeRemoteState(_ []byte, _ bool) {}

var _ memberlist.Delegate = (*metaDelegate)(nil)

// events turns memberlist's events into a coalescing notification. Memberlist
// calls them with its state locked, so they only log and never block.
type events struct{ m *Members }

func (e events) NotifyJoin(n *memberlist.Node) {
	e.notify("Member joined", n)
	if n.Name != e.m.name {
		select {
		case e.m.joined <- struct{}{}:
		default:
		}
	}
}
func (e events) NotifyLeave(n *memberlist.Node)  { e.notify("Member gone", n) } // dead or left
func (e events) NotifyUpdate(n *memberlist.Node) { e.notify("Member updated", n) }

func (e events) notify(what string, n *memberlist.Node) {
	if n.Name == e.m.name {
		md := bytes.Clone(n.Meta)
		e.m.local.Store(&md)
	}
	if l := e.m.logger.V(2); l.Enabled() {
		md, err := decodeMeta(n.Meta)
		addr, _ := netip.AddrFromSlice(n.Addr)
		l.Info(what, "name", n.Name, "addr", netip.AddrPortFrom(addr.Unmap(), n.Port), "observer", md.role == roleObserver, "addresses", md.addresses, "fitness", md.fitness, "metaErr", err)
	}
	e.m.notify()
}

// newLogger routes memberlist's log (lines such as "[DEBUG] memberlist:
// ...") into klog at V(4): its own warnings are mostly about single missed
// probes, which the events above summarise.
func newLogger(logger klog.Logger) *log.Logger {
	return log.New(klogWriter{logger.WithName("memberlist").V(4)}, "", 0)
}

type klogWriter struct{ logger klog.Logger }

func (w klogWriter) Write(p []byte) (int, error) {
	if w.logger.Enabled() {
		w.logger.Info(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}
