package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// replicas is each replica's config, leadership and work.
func replicas() row {
	return row{"Config and replicas", []cog.Builder[dashboard.Panel]{
		series("Config reloads", "Reloads of a changed cloud-config per interval, by result. A failure is a change that did not validate; the running config goes on.",
			look{unit: "short", min: ptr(0.0), span: 6},
			query{"sum by (result) (increase(" + ccm("metal_ccm_config_reloads_total") + rateInterval + "))", "{{result}}"}),
		upDown("Last config reload", "Whether each replica's last changed cloud-config applied. Refused: the replica's log names each problem (MetalCCMConfigReloadFailing).",
			bad("refused"), good("applied"), 6,
			query{ccm("metal_ccm_config_last_reload_successful"), "{{instance}}"}),
		upDown("Leader", "Which replica holds the Lease and runs the controllers (allocations, pool usage). None, or a change every few minutes, is a replica that cannot renew its Lease.",
			state{"standby", "text"}, state{"leader", "blue"}, 6,
			query{"max by (instance) (" + ccm("leader_election_master_status") + ")", "{{instance}}"}),
		series("Service syncs", "Syncs of a Service by the leader's service controller per second: Service changes, retries and cleanups.",
			look{unit: "cps", min: ptr(0.0), span: 6},
			query{"sum(rate(" + ccm("metal_ccm_service_syncs_total") + rateInterval + "))", "syncs"}),
		series("Service status writes", "Writes of the Services' conditions and announcement summary per second by the leader, by result; at most serviceStatus.writesPerSecond.",
			look{unit: "cps", min: ptr(0.0), span: 6},
			query{"sum by (result) (rate(" + ccm("metal_ccm_service_status_writes_total") + rateInterval + "))", "{{result}}"}),
	}}
}
