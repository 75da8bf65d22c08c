package main

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// The panels of the dashboard come in three shapes: a time series, a single
// number (stat) and an up/down timeline. Every panel queries the Prometheus
// chosen in the datasource variable, so that one JSON fits any Grafana.

// datasource is the Prometheus of the ${datasource} variable.
var datasource = common.DataSourceRef{Type: ptr("prometheus"), Uid: ptr("${datasource}")}

// query is one PromQL target and the legend of its series.
type query struct{ expr, legend string }

// target is the i-th query of a panel, named A, B, ... as Grafana names them.
func (q query) target(i int) *prometheus.DataqueryBuilder {
	return prometheus.NewDataqueryBuilder().RefId(fmt.Sprintf("%c", 'A'+i)).Expr(q.expr).LegendFormat(q.legend)
}

// tooltip shows every series at the pointer, largest first.
func tooltip() *common.VizTooltipOptionsBuilder {
	return common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)
}

// look is what a panel shows besides its queries: the unit, the range of the
// axis, and the thresholds that color a value (nil: none).
type look struct {
	unit       string
	min, max   *float64
	thresholds []dashboard.Threshold
	stacked    bool
	// span is the width in grid columns (of 24); 0 is 8, three a line.
	span uint32
}

func (l look) width() uint32 {
	if l.span == 0 {
		return 8
	}
	return l.span
}

// series is a time-series panel.
func series(title, desc string, l look, qs ...query) *timeseries.PanelBuilder {
	p := timeseries.NewPanelBuilder().Title(title).Description(desc).Datasource(datasource).
		Height(8).Span(l.width()).Unit(l.unit).FillOpacity(10).Tooltip(tooltip())
	if l.min != nil {
		p.Min(*l.min)
	}
	if l.max != nil {
		p.Max(*l.max)
	}
	if l.thresholds != nil {
		p.Thresholds(thresholds(l.thresholds)).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeLine))
	}
	if l.stacked {
		p.Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal))
	}
	for i, q := range qs {
		p.WithTarget(q.target(i))
	}
	return p
}

// single is a stat panel: the last value of one query, colored by its
// thresholds.
func single(title, desc string, l look, q query) *stat.PanelBuilder {
	p := stat.NewPanelBuilder().Title(title).Description(desc).Datasource(datasource).
		Height(4).Span(4).Unit(l.unit).
		ColorMode(common.BigValueColorModeBackground).GraphMode(common.BigValueGraphModeNone).
		Orientation(common.VizOrientationAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Calcs([]string{"lastNotNull"})).
		WithTarget(q.target(0))
	if l.thresholds != nil {
		p.Thresholds(thresholds(l.thresholds))
	}
	return p
}

// state names a value of a 0/1 series and gives its color.
type state struct{ text, color string }

// Usual states of a 0/1 series: 1 is good, 0 is bad.
var (
	good = func(text string) state { return state{text, "green"} }
	bad  = func(text string) state { return state{text, "red"} }
)

// upDown is a state timeline of 0/1 series, one line per series, with the
// words and colors of 0 and 1.
func upDown(title, desc string, zero, one state, span uint32, q query) *statetimeline.PanelBuilder {
	return statetimeline.NewPanelBuilder().Title(title).Description(desc).Datasource(datasource).
		Height(8).Span(look{span: span}.width()).
		Mappings([]dashboard.ValueMapping{{ValueMap: &dashboard.ValueMap{
			Type: dashboard.MappingTypeValueToText,
			Options: map[string]dashboard.ValueMappingResult{
				"0": {Text: ptr(zero.text), Color: ptr(zero.color)},
				"1": {Text: ptr(one.text), Color: ptr(one.color)},
			},
		}}}).
		Tooltip(tooltip()).
		WithTarget(q.target(0))
}

func thresholds(steps []dashboard.Threshold) cog.Builder[dashboard.ThresholdsConfig] {
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(steps)
}

// redAbove colors values from limit on red, and green below it.
func redAbove(limit float64) []dashboard.Threshold {
	return []dashboard.Threshold{{Color: "green"}, {Value: &limit, Color: "red"}}
}

func ptr[T any](v T) *T { return &v }
