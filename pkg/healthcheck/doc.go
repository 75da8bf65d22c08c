// Package healthcheck probes HTTP health endpoints of the nodes (kube-proxy's
// /healthz, a Local Service's healthCheckNodePort) as a cloud load balancer
// does, and tells its user when a target's state changes. Each target has
// one goroutine and one kept-alive connection, a fixed request and a bounded
// read, so that a replica can check thousands of nodes twice a second.
//
// A target's first result sets its state; after that a state changes only
// after FailuresToWithdraw failures or SuccessesToReturn successes in a
// row, so that a flapping target does not flap routes.
package healthcheck
