package config

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func (h *HealthChecks) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, d := range []struct {
		name string
		v    *metav1.Duration
	}{{"interval", h.Interval}, {"timeout", h.Timeout}} {
		if d.v != nil && (d.v.Duration < MinHealthCheckDuration || d.v.Duration > MaxHealthCheckDuration) {
			errs = append(errs, field.Invalid(p.Child(d.name), d.v.Duration.String(),
				fmt.Sprintf("must be from %s to %s", MinHealthCheckDuration, MaxHealthCheckDuration)))
		}
	}
	if h.HTTPInterval != nil && h.Interval != nil && (h.HTTPInterval.Duration < h.Interval.Duration || h.HTTPInterval.Duration > MaxHealthCheckDuration) {
		errs = append(errs, field.Invalid(p.Child("httpInterval"), h.HTTPInterval.Duration.String(),
			fmt.Sprintf("must be from interval (%s) to %s", h.Interval.Duration, MaxHealthCheckDuration)))
	}
	for _, n := range []struct {
		name string
		v    int
	}{{"failuresToWithdraw", h.FailuresToWithdraw}, {"successesToReturn", h.SuccessesToReturn}} {
		if n.v < 0 || n.v > MaxHealthCheckResultsInARow {
			errs = append(errs, field.Invalid(p.Child(n.name), n.v, fmt.Sprintf("must be from 1 to %d", MaxHealthCheckResultsInARow)))
		}
	}
	return errs
}

func (s *ServiceStatus) validate(p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if d := s.MinInterval; d != nil && (d.Duration < MinStatusMinInterval || d.Duration > MaxStatusMinInterval) {
		errs = append(errs, field.Invalid(p.Child("minInterval"), d.Duration.String(),
			fmt.Sprintf("must be from %s to %s", MinStatusMinInterval, MaxStatusMinInterval)))
	}
	if s.WritesPerSecond < 0 || s.WritesPerSecond > MaxStatusWritesPerSecond {
		errs = append(errs, field.Invalid(p.Child("writesPerSecond"), s.WritesPerSecond, fmt.Sprintf("must be from 1 to %d", MaxStatusWritesPerSecond)))
	}
	return errs
}
