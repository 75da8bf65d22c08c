// Package healthcheck probes HTTP health endpoints of the nodes (kube-proxy's
// /healthz, a Local Service's healthCheckNodePort) as a cloud load balancer
// does, and tells its user when a target's state changes. Each target has
// one kept-alive connection, a fixed request and a bounded read; the
// targets are spread over a few slots, each one goroutine that checks its
// targets together at its own phase of the interval (slots.go), so that a
// replica can check thousands of nodes a second.
//
// A target's first result sets its state; after that a state changes only
// after FailuresToWithdraw failures or SuccessesToReturn successes in a
// row, so that a flapping target does not flap routes.
package healthcheck
