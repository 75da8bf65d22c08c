package migrate

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Label turns an object name (a DNS subdomain, which may hold dots) into a
// DNS label, as pool and peer names must be here: each character a label
// may not hold becomes "-". ok is false when the name had to change.
func Label(name string) (label string, ok bool) {
	if len(validation.IsDNS1123Label(name)) == 0 {
		return name, true
	}
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	label = strings.Trim(b.String(), "-")
	if len(label) > validation.DNS1123LabelMaxLength {
		label = strings.TrimRight(label[:validation.DNS1123LabelMaxLength], "-")
	}
	if label == "" {
		label = "unnamed"
	}
	return label, false
}
