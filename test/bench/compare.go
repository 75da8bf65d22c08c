package bench

import (
	"fmt"
	"strings"
)

// Compare is a Markdown table of two runs side by side: every figure of a,
// with b's figure of the same scenario and key, and b's value as a multiple
// of a's.
func Compare(a, b *Results) string {
	var out strings.Builder
	fmt.Fprintf(&out, "A: `%s` (%s, %s)  \nB: `%s` (%s, %s)\n\n",
		a.CCM, a.Profile, a.Started.UTC().Format("2006-01-02 15:04"), b.CCM, b.Profile, b.Started.UTC().Format("2006-01-02 15:04"))
	out.WriteString("| scenario | figure | A | B | B / A |\n| --- | --- | ---: | ---: | ---: |\n")
	for _, sa := range a.Scenarios {
		sb := b.Scenario(sa.ID)
		for i, fa := range sa.Figures {
			title := ""
			if i == 0 {
				title = sa.Title
			}
			bv, ratio := "", ""
			if sb != nil {
				if fb := sb.Figure(fa.Key); fb != nil {
					bv = value(fb.Value, fb.Unit)
					if fa.Value != 0 {
						ratio = fmt.Sprintf("%.2f", fb.Value/fa.Value)
					}
				}
			}
			fmt.Fprintf(&out, "| %s | %s | %s | %s | %s |\n", title, fa.Name, value(fa.Value, fa.Unit), bv, ratio)
		}
	}
	return out.String()
}
