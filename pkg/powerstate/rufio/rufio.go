// Package rufio is the "rufio" power-state source, for clusters provisioned
// by Tinkerbell: a machine's power state is its Rufio Machine's
// status.powerState, which Rufio keeps from the BMC. The Machines are read
// with the dynamic client, as unstructured objects, and only that field:
// Rufio's API module is not a dependency (it pulls in Rufio's own
// dependency tree, BMC libraries included, for one field).
//
// Only "off" is evidence of a shutdown; "unknown" (Rufio could not ask the
// BMC) and a missing field say nothing.
package rufio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
	"github.com/metal-ccm/metal-ccm/pkg/powerstate/internal/objcache"
)

// Name is the source's name in nodes.powerState.source.
const Name = "rufio"

// GVR is the resource read: the published API's group, version and plural.
var GVR = schema.GroupVersionResource{Group: "bmc.tinkerbell.org", Version: "v1alpha1", Resource: "machines"}

// Rufio's power states (status.powerState).
const (
	PowerOn  = "on"
	PowerOff = "off"
)

var (
	// ErrNoMachine is returned for a machine for which no Rufio Machine is
	// named.
	ErrNoMachine = errors.New("no Rufio Machine for this machine: name it (powerState: {namespace, name}) or set the source's namespace")
	// ErrUnknownPower is returned for a Machine whose power state is not
	// on or off.
	ErrUnknownPower = errors.New("the Rufio Machine's power state is not known")
)

func init() { powerstate.Register(Name, New) }

// Source answers from a cache of Rufio Machines.
type Source struct {
	cfg   objcache.SourceSettings
	cache *objcache.Cache
}

// New checks the settings and, with a cluster client, starts watching the
// Machines (in the settings' namespace only, when one is set).
func New(raw json.RawMessage, env powerstate.Env) (powerstate.Source, error) {
	cfg, err := objcache.ParseSource(raw)
	if err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, cache: objcache.Start(env, GVR, cfg.Namespace, answers.WatchError)}, nil
}

// machineOf finds the machine's Rufio Machine: named by its settings, else
// named like the Node in the source's namespace.
func (s *Source) machineOf(m powerstate.Machine) (objcache.Ref, error) {
	ref, ok, err := objcache.FromSettings(m.Settings, s.cfg)
	if err != nil || ok {
		return ref, err
	}
	if m.Node != nil && s.cfg.Namespace != "" {
		return objcache.Ref{Namespace: s.cfg.Namespace, Name: m.Node.Name}, nil
	}
	return objcache.Ref{}, ErrNoMachine
}

// Shutdown reports whether the machine's Rufio Machine says its power is off.
func (s *Source) Shutdown(_ context.Context, m powerstate.Machine) (bool, error) {
	ref, err := s.machineOf(m)
	if err != nil {
		answers.Answer(resultSettings)
		return false, err
	}
	u, err := s.cache.Get(ref.Namespace, ref.Name)
	if err != nil {
		result := resultNotSynced
		if errors.Is(err, objcache.ErrNotFound) {
			result = resultNotFound
		}
		answers.Answer(result)
		return false, fmt.Errorf("machines.bmc.tinkerbell.org %s: %w", ref, err)
	}
	off, result, err := PoweredOff(u)
	answers.Answer(result)
	if err != nil {
		return false, fmt.Errorf("machines.bmc.tinkerbell.org %s: %w", ref, err)
	}
	return off, nil
}

// PoweredOff reads a Machine's evidence: off only for status.powerState
// "off". result is the metrics' label.
func PoweredOff(u *unstructured.Unstructured) (off bool, result string, err error) {
	state, _, _ := unstructured.NestedString(u.Object, "status", "powerState")
	switch state {
	case PowerOff:
		return true, resultOff, nil
	case PowerOn:
		return false, resultOn, nil
	default:
		return false, resultUnknown, fmt.Errorf("%w: status.powerState is %q", ErrUnknownPower, state)
	}
}

// Close stops watching the Machines.
func (s *Source) Close() error {
	s.cache.Close()
	return nil
}
