package config

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/metal-ccm/metal-ccm/pkg/bgp/limits"
)

// validate checks a peer's BFD profile (nil: none), after defaults.
func (b *BFD) validate(p *field.Path) field.ErrorList {
	if b == nil {
		return nil
	}
	var errs field.ErrorList
	for _, iv := range []struct {
		name string
		d    time.Duration
	}{{"receiveInterval", b.ReceiveInterval.Duration}, {"transmitInterval", b.TransmitInterval.Duration}} {
		if iv.d < limits.MinBFDInterval || iv.d > limits.MaxBFDInterval {
			errs = append(errs, field.Invalid(p.Child(iv.name), iv.d.String(),
				fmt.Sprintf("must be from %s to %s", limits.MinBFDInterval, limits.MaxBFDInterval)))
		}
	}
	if b.Multiplier < limits.MinBFDMultiplier || b.Multiplier > limits.MaxBFDMultiplier {
		errs = append(errs, field.Invalid(p.Child("multiplier"), b.Multiplier,
			fmt.Sprintf("must be from %d to %d", limits.MinBFDMultiplier, limits.MaxBFDMultiplier)))
	}
	return errs
}
