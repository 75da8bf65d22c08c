package framework

import (
	"strconv"
	"strings"
)

// MetricValue is the value of an unlabelled metric in a Prometheus text page
// (/metrics); ok is false when the page does not have it.
func MetricValue(page, name string) (float64, bool) {
	for _, line := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			return f, err == nil
		}
	}
	return 0, false
}
