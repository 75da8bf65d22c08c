package netlab

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// l2Blocks numbers the nftables tables of BlockBetweenNodes, so that each
// call has its own table that its undo deletes.
var l2Blocks atomic.Uint64

// BlockBetweenNodes drops TCP and UDP traffic to and from port between node
// i and the other nodes (both families, both directions), and nothing else:
// the client still reaches node i on that port, and the other ports stay
// open. It is a partition of the nodes' own channel (e.g. a memberlist
// port) while the segment works. It adds an nftables table of its own in
// node i's namespace; undo deletes it (once; later calls return nil). It
// needs nft (hack/install-deps.sh installs it).
func (l *L2Lab) BlockBetweenNodes(i int, port uint16) (undo func() error, err error) {
	if err := l.node(i); err != nil {
		return nil, err
	}
	table := fmt.Sprintf("mccm_block_%d_%d", port, l2Blocks.Add(1))
	ns := l.Nodes[i]
	if _, err := command(context.Background(), l2BlockRules(table, i, len(l.Nodes), port), "ip", "netns", "exec", ns, "nft", "-f", "-"); err != nil {
		return nil, fmt.Errorf("netlab L2 block port %d between node %d and the others: %w", port, i, err)
	}
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			if _, e := execIn(context.Background(), ns, "nft", "delete", "table", "inet", table); e != nil {
				err = fmt.Errorf("netlab L2 unblock port %d of node %d: %w", port, i, e)
			}
		})
		return err
	}, nil
}

// l2BlockRules is the nftables script of BlockBetweenNodes: table (family
// inet) in node i of n, dropping TCP and UDP to or from port with the
// other nodes' addresses, on input and output.
func l2BlockRules(table string, i, n int, port uint16) string {
	var peers [2][]string // by family: IPv4, IPv6
	for j := range n {
		if j != i {
			peers[0] = append(peers[0], L2NodeAddr(IPv4, j).String())
			peers[1] = append(peers[1], L2NodeAddr(IPv6, j).String())
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", table)
	for _, hook := range []struct{ chain, dir string }{{"input", "saddr"}, {"output", "daddr"}} {
		fmt.Fprintf(&b, "\tchain %s {\n\t\ttype filter hook %s priority filter; policy accept;\n", hook.chain, hook.chain)
		for f, proto := range []string{"ip", "ip6"} {
			if len(peers[f]) == 0 {
				continue // a lab of one node: no one to block
			}
			for _, l4 := range []string{"tcp", "udp"} {
				for _, side := range []string{"dport", "sport"} {
					fmt.Fprintf(&b, "\t\t%s %s { %s } %s %s %d drop\n", proto, hook.dir, strings.Join(peers[f], ", "), l4, side, port)
				}
			}
		}
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// l2BlockTables lists the nftables tables of node i (for tests).
func (l *L2Lab) l2BlockTables(i int) (string, error) {
	return execIn(context.Background(), l.Nodes[i], "nft", "list", "tables")
}

// CutAgentFromAPI drops the traffic of node i's agent with the API server
// (its relay's port, AgentAPIPort, both directions) and nothing else: the
// connection hangs as in a partition, while the kubelet and kube-proxy
// keep theirs. undo deletes the table (once; later calls return nil).
func (l *L2Lab) CutAgentFromAPI(i int) (undo func() error, err error) {
	if err := l.node(i); err != nil {
		return nil, err
	}
	table := fmt.Sprintf("mccm_apicut_%d", l2Blocks.Add(1))
	ns := l.Nodes[i]
	rules := fmt.Sprintf("table inet %s {\n\tchain output {\n\t\ttype filter hook output priority filter; policy accept;\n"+
		"\t\ttcp dport %d drop\n\t\ttcp sport %d drop\n\t}\n}\n", table, AgentAPIPort, AgentAPIPort)
	if _, err := command(context.Background(), rules, "ip", "netns", "exec", ns, "nft", "-f", "-"); err != nil {
		return nil, fmt.Errorf("netlab L2 cut node %d's agent from the API server: %w", i, err)
	}
	var once sync.Once
	return func() error {
		var err error
		once.Do(func() {
			if _, e := execIn(context.Background(), ns, "nft", "delete", "table", "inet", table); e != nil {
				err = fmt.Errorf("netlab L2 reconnect node %d's agent to the API server: %w", i, e)
			}
		})
		return err
	}, nil
}
