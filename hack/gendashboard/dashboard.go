package main

import (
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// uid is the dashboard's fixed identity: Grafana replaces a dashboard of the
// same uid on each load, so a new chart version updates it in place.
const uid = "metal-ccm"

// build is the whole dashboard: the variables, then one row per subject
// of docs/dashboard.md, in its order.
//
// It is the classic dashboard JSON model, which the library marks deprecated
// for its v2 schema: v2 is a resource of the dashboard API of Grafana 12 on,
// while the classic model is what the sidecar's file provisioning and every
// Grafana release read.
//
//nolint:staticcheck // the classic model, for the sidecar and older Grafanas (above)
func build() *dashboard.DashboardBuilder {
	d := dashboard.NewDashboardBuilder("metal-ccm").
		Uid(uid).
		Description("LoadBalancer pools, BGP, next-hop health, L2 and config of metal-ccm (docs/dashboard.md).").
		Tags([]string{"metal-ccm", "kubernetes"}).
		Refresh("1m").
		Time("now-6h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Prometheus").Type("prometheus")).
		WithVariable(jobVariable("job", "CCM job", "metal_ccm_config_last_reload_successful",
			"Scrape jobs of the metal-ccm replicas.")).
		WithVariable(jobVariable("agent_job", "Node agent job", "metal_ccm_agent_bgp_announced_prefixes",
			"Scrape jobs of the node agents (metal-node-agent)."))
	for _, r := range rows() {
		d.WithRow(dashboard.NewRowBuilder(r.title))
		for _, p := range r.panels {
			d.WithPanel(p)
		}
	}
	return d
}

// number gives every panel and row an id, 1, 2, ... in order: Grafana
// keeps a panel's state (a link to it, a library panel) by id, which must be
// unique in the dashboard, and the library leaves it unset.
//
//nolint:staticcheck // the classic model (build)
func number(d *dashboard.Dashboard) {
	for i := range d.Panels {
		id := uint32(i + 1)
		switch p := d.Panels[i]; {
		case p.Panel != nil:
			p.Panel.Id = &id
		case p.RowPanel != nil:
			p.RowPanel.Id = id
		}
	}
}

// jobVariable is a multi-value variable of the job label of a metric that
// every process of that kind always serves, all selected by default.
func jobVariable(name, label, metric, desc string) *dashboard.QueryVariableBuilder {
	q := fmt.Sprintf("label_values(%s, job)", metric)
	return dashboard.NewQueryVariableBuilder(name).Label(label).Description(desc).
		Datasource(datasource).
		Query(dashboard.StringOrMap{Map: map[string]any{"query": q, "refId": "PrometheusVariableQueryEditor-VariableQuery"}}).
		Definition(q).
		Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
		Sort(dashboard.VariableSortAlphabeticalAsc).
		Multi(true).IncludeAll(true).AllValue(".*").
		Current(dashboard.VariableOption{Text: dashboard.StringOrArrayOfString{String: ptr("All")},
			Value: dashboard.StringOrArrayOfString{String: ptr("$__all")}})
}

// ccm selects a metric of the replicas: the job variable and more matchers.
func ccm(metric string, matchers ...string) string {
	return selector(metric, "job", matchers)
}

// agent selects a metric of the node agents.
func agent(metric string, matchers ...string) string {
	return selector(metric, "agent_job", matchers)
}

func selector(metric, variable string, matchers []string) string {
	ms := append([]string{fmt.Sprintf(`job=~"$%s"`, variable)}, matchers...)
	return metric + "{" + strings.Join(ms, ", ") + "}"
}
