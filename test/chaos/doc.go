// Package chaos injects faults into a running metal-ccm and measures what
// they cost: SIGKILL of the leader during a Service creation storm, a
// kube-apiserver restart, a router restart and BGP session flaps, a replica
// cut off from the API server, cloud-config reloads, and a node powered off
// (real nodes: its link down, its kubelet and kube-proxy frozen) with the
// node health checks on and off. It runs the real control plane on
// 127.0.0.1 and, as root, a real BIRD router in network namespaces
// (test/netlab), with every address in 198.18.0.0/15 or 2001:db8::/32.
//
// CHAOS_PROFILE=short (the default, part of `make test`) runs each fault
// briefly; CHAOS_PROFILE=full (`make chaos`) runs the figures of
// docs/reliability.md. With CHAOS_REPORT set to a path, the results table is
// written into that file between its chaos-table markers.
package chaos
