// Package metal3 is the "metal3" power-state source, for clusters provisioned
// by Metal3: a machine's power state is its BareMetalHost's
// status.poweredOn, which the baremetal-operator keeps from the BMC. The
// hosts are read with the dynamic client, as unstructured objects, and only
// the fields named here: the operator's API module is not a dependency (it
// pulls in the operator's own dependency tree for three fields).
//
// Only poweredOn false of a provisioned host is evidence of a shutdown: a
// host being provisioned, inspected or deprovisioned is powered off and on
// by the operator itself, and a missing field says nothing. A deleted host
// is evidence that the machine is gone (Exists).
package metal3

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/metal-ccm/metal-ccm/pkg/powerstate"
	"github.com/metal-ccm/metal-ccm/pkg/powerstate/internal/objcache"
)

// Name is the source's name in nodes.powerState.source.
const Name = "metal3"

// GVR is the resource read: the published API's group, version and plural.
var GVR = schema.GroupVersionResource{Group: "metal3.io", Version: "v1alpha1", Resource: "baremetalhosts"}

// ProviderIDPrefix starts the providerID Metal3's Cluster API provider
// (CAPM3) gives its nodes: metal3://<namespace>/<host>/<Metal3Machine>.
const ProviderIDPrefix = "metal3://"

// The provisioning states (status.provisioning.state) of a host that runs
// its image: only then is its power state the machine's own.
const (
	StateProvisioned           = "provisioned"
	StateExternallyProvisioned = "externally provisioned"
)

var (
	// ErrNoHost is returned for a machine for which no host is named.
	ErrNoHost = errors.New("no BareMetalHost for this machine: name it (powerState: {namespace, name}), give the node a metal3:// providerID, or set the source's namespace")
	// ErrNotProvisioned is returned for a host that is not provisioned.
	ErrNotProvisioned = errors.New("the BareMetalHost is not provisioned")
	// ErrNoPowerState is returned for a host without status.poweredOn.
	ErrNoPowerState = errors.New("the BareMetalHost has no status.poweredOn")
	// ErrNeverSeen is Exists' answer for a missing host that this source
	// never saw: a name that may be wrong is not evidence of a deletion.
	ErrNeverSeen = errors.New("the BareMetalHost was never seen by this source")
)

func init() { powerstate.Register(Name, New) }

// Source answers from a cache of BareMetalHosts.
type Source struct {
	cfg   objcache.SourceSettings
	cache *objcache.Cache
}

var _ powerstate.Existence = (*Source)(nil)

// New checks the settings and, with a cluster client, starts watching the
// hosts (in the settings' namespace only, when one is set).
func New(raw json.RawMessage, env powerstate.Env) (powerstate.Source, error) {
	cfg, err := objcache.ParseSource(raw)
	if err != nil {
		return nil, err
	}
	return &Source{cfg: cfg, cache: objcache.Start(env, GVR, cfg.Namespace, answers.WatchError)}, nil
}

// host is the host of a machine, and whether it is named for it alone (by
// its settings or its providerID) rather than found by the Node's name.
type host struct {
	objcache.Ref
	byProviderID bool
}

// hostOf finds the machine's host: named by its settings, else by the
// Node's metal3:// providerID, else the host named like the Node in the
// source's namespace.
func (s *Source) hostOf(m powerstate.Machine) (host, error) {
	ref, ok, err := objcache.FromSettings(m.Settings, s.cfg)
	if err != nil || ok {
		return host{Ref: ref}, err
	}
	if m.Node != nil {
		if ref, ok := fromProviderID(m.Node.Spec.ProviderID); ok {
			return host{Ref: ref, byProviderID: true}, s.cfg.Holds(ref)
		}
		if s.cfg.Namespace != "" {
			return host{Ref: objcache.Ref{Namespace: s.cfg.Namespace, Name: m.Node.Name}}, nil
		}
	}
	return host{}, ErrNoHost
}

// fromProviderID reads metal3://<namespace>/<host>/<Metal3Machine>. The
// older form, metal3://<host UID>, names no host and is ignored.
func fromProviderID(pid string) (objcache.Ref, bool) {
	rest, ok := strings.CutPrefix(pid, ProviderIDPrefix)
	if !ok {
		return objcache.Ref{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return objcache.Ref{}, false
	}
	return objcache.Ref{Namespace: parts[0], Name: parts[1]}, true
}

// Shutdown reports whether the machine's provisioned host is powered off.
func (s *Source) Shutdown(_ context.Context, m powerstate.Machine) (bool, error) {
	h, err := s.hostOf(m)
	if err != nil {
		answers.Answer(resultSettings)
		return false, err
	}
	u, err := s.cache.Get(h.Namespace, h.Name)
	if err != nil {
		answers.Answer(cacheResult(err))
		return false, fmt.Errorf("BareMetalHost %s: %w", h, err)
	}
	off, result, err := PoweredOff(u)
	answers.Answer(result)
	if err != nil {
		return false, fmt.Errorf("BareMetalHost %s: %w", h, err)
	}
	return off, nil
}

// PoweredOff reads a host's evidence: off only for a provisioned host whose
// status.poweredOn is false. result is the metrics' label.
func PoweredOff(u *unstructured.Unstructured) (off bool, result string, err error) {
	state, _, _ := unstructured.NestedString(u.Object, "status", "provisioning", "state")
	if state != StateProvisioned && state != StateExternallyProvisioned {
		return false, resultNotProvisioned, fmt.Errorf("%w: its provisioning state is %q", ErrNotProvisioned, state)
	}
	on, found, err := unstructured.NestedBool(u.Object, "status", "poweredOn")
	if err != nil || !found {
		return false, resultNoPowerState, ErrNoPowerState
	}
	if on {
		return false, resultOn, nil
	}
	return true, resultOff, nil
}

// Exists is false only when the machine's host, named by its providerID or
// seen by this source, is no longer there once the cache has synced.
// Anything else (no host named, no cache yet, a host never seen) is an
// error, and the machine exists.
func (s *Source) Exists(_ context.Context, m powerstate.Machine) (bool, error) {
	h, err := s.hostOf(m)
	if err != nil {
		return true, err
	}
	_, err = s.cache.Get(h.Namespace, h.Name)
	switch {
	case err == nil:
		return true, nil
	case !errors.Is(err, objcache.ErrNotFound):
		return true, fmt.Errorf("BareMetalHost %s: %w", h, err)
	case h.byProviderID || s.cache.Seen(h.Namespace, h.Name):
		answers.Answer(resultGone)
		return false, nil
	default:
		return true, fmt.Errorf("BareMetalHost %s: %w: %w", h, err, ErrNeverSeen)
	}
}

// Close stops watching the hosts.
func (s *Source) Close() error {
	s.cache.Close()
	return nil
}

func cacheResult(err error) string {
	if errors.Is(err, objcache.ErrNotFound) {
		return resultNotFound
	}
	return resultNotSynced
}
