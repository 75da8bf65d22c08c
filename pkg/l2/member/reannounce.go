package member

import (
	"context"
	"time"
)

// reannounceAfter gathers the joins of a moment (agents started together)
// into one announcement.
const reannounceAfter = 200 * time.Millisecond

// reannounce gossips this member's metadata again, with a new incarnation,
// after another member joins, until ctx ends. A member that joins learns
// the others' metadata from the one it exchanges state with, which may
// itself hold an older version of a third member's (its fitness told
// before the two met): gossip had sent the update to the members there
// were then, and the next full exchange is up to PushPullInterval away.
// Meanwhile the newcomer would take a fit member for unfit and answer for
// its addresses beside it. Announced again, every member's current
// metadata reaches the newcomer within a few gossip rounds; members that
// had it already see nothing change.
func (m *Members) reannounce(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.done:
			return
		case <-m.joined:
		}
		select {
		case <-ctx.Done():
			return
		case <-m.done:
			return
		case <-time.After(reannounceAfter):
		}
		m.mu.Lock()
		if !m.down {
			if err := m.ml.UpdateNode(leaveTimeout); err != nil {
				m.logger.V(2).Info("Announcing this member's metadata again for a member that joined", "err", err)
			}
			m.reannounced.Add(1)
		}
		m.mu.Unlock()
	}
}
