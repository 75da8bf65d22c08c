package healthcheck

import "github.com/metal-ccm/metal-ccm/pkg/config"

// FromConfig are the checks' options from the cloud-config's healthChecks
// section (defaults filled in by config.Parse), and whether they are on.
func FromConfig(h config.HealthChecks) (Options, bool) {
	if h.Enabled != nil && !*h.Enabled {
		return Options{}, false
	}
	var o Options
	if h.Interval != nil {
		o.Interval = h.Interval.Duration
	}
	if h.Timeout != nil {
		o.Timeout = h.Timeout.Duration
	}
	if h.HTTPInterval != nil {
		o.HTTPInterval = h.HTTPInterval.Duration
	}
	o.FailuresToWithdraw, o.SuccessesToReturn = h.FailuresToWithdraw, h.SuccessesToReturn
	return o.withDefaults(), true
}
