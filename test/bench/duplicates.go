package bench

import (
	"context"
	"fmt"
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// duplicateAddresses counts the addresses that more than one Service shows
// in its status. The harness's Services never ask to share an address, so
// each is an address handed out twice: a CCM that does that is not fast, it
// is wrong, and the figure's goal (0) says so next to its times.
func (e *env) duplicateAddresses(ctx context.Context) (int, error) {
	holders := map[netip.Addr]int{}
	opts := metav1.ListOptions{Limit: 1000}
	for {
		list, err := e.cs.CoreV1().Services("").List(ctx, opts)
		if err != nil {
			return 0, fmt.Errorf("bench: list Services: %w", err)
		}
		for _, s := range list.Items {
			for _, ing := range s.Status.LoadBalancer.Ingress {
				if a, err := netip.ParseAddr(ing.IP); err == nil {
					holders[a.Unmap()]++
				}
			}
		}
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	dups := 0
	for _, n := range holders {
		if n > 1 {
			dups++
		}
	}
	return dups, nil
}

// addDuplicates adds the figure of duplicate addresses to s.
func (e *env) addDuplicates(ctx context.Context, s *Scenario) error {
	n, err := e.duplicateAddresses(ctx)
	if err != nil {
		return err
	}
	s.add("duplicate_addresses", "addresses held by two Services (none asked to share)", float64(n), "count").atMost(0, "0", false)
	return nil
}
