// Package powerstate is the registry of sources that tell whether a machine is
// shut down, for the provider's InstanceShutdown. A source (Redfish, IPMI, a
// hypervisor's API) is one package that calls Register from an init
// function: it gets its own config section (nodes.powerState.settings) and the
// provider's environment (a cluster client) when it is built, and each
// machine's own settings (nodes.inventory[].powerState, for example a BMC
// address and a credentials file) when it is asked.
package powerstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"
)

// Machine is what a source is asked about.
type Machine struct {
	// Node is the node of the machine.
	Node *v1.Node
	// ID is the machine's inventory id; "" for a node not in the inventory
	// (a discovered one).
	ID string
	// Settings are the machine's own settings for the source
	// (nodes.inventory[].powerState), a JSON object; nil when it has none.
	Settings json.RawMessage
}

// Source tells whether a machine is shut down (powered off but still known).
// A source that cannot tell returns an error; the node is then treated as
// running. Its methods may be called concurrently.
type Source interface {
	Shutdown(ctx context.Context, m Machine) (bool, error)
	// Close releases what the source holds (connections, sessions); the
	// provider calls it when a reloaded config replaces the source.
	Close() error
}

// Existence is what a source implements when it can also tell that a machine
// is gone (a deleted BareMetalHost), for the provider's InstanceExists. Only
// (false, nil) is "gone", and only for a machine the source was configured to
// find; anything it cannot tell is an error, and the machine then exists.
type Existence interface {
	Exists(ctx context.Context, m Machine) (bool, error)
}

// Cached is what a source implements when it reuses a BMC's answer for a
// while (its cacheAge setting): the provider asks it no more often than
// that about one machine.
type Cached interface {
	CacheAge() time.Duration
}

// Env is what the provider gives a source besides its settings.
type Env struct {
	// Dynamic reads the cluster's objects (BareMetalHosts, Rufio Machines).
	// It is nil while the provider has no cluster client: before the
	// replica leads, when the config is only checked. A source that needs
	// it is still built (its settings are checked) and answers every
	// question with ErrNoCluster until the provider builds it again with a
	// client.
	Dynamic dynamic.Interface
	// Context ends when the provider stops; what a source starts (an
	// informer) ends with it or with the source's Close. Nil is
	// context.Background().
	Context context.Context
}

// Ctx is Env's Context, or context.Background() when it has none.
func (e Env) Ctx() context.Context {
	if e.Context == nil {
		return context.Background()
	}
	return e.Context
}

// Fencer is a Source that can also power a machine off through its BMC, at
// once and without asking its operating system: fencing a machine that is
// hung but powered. It returns once the BMC took the order; the source's next
// answer is the BMC's new word.
type Fencer interface {
	PowerOff(ctx context.Context, m Machine) error
}

// Factory builds a Source from its settings (nodes.powerState.settings, a
// JSON object; nil when none are given) and the provider's environment. It
// should check the settings and fail with an error that says which setting
// is wrong: the config is then refused.
type Factory func(settings json.RawMessage, env Env) (Source, error)

// None is the name of the default source: no machine is ever shut down.
const None = "none"

var (
	mu        sync.RWMutex
	factories = map[string]Factory{None: newNone}
)

// Register makes a source available under name, for nodes.powerState.source.
// It panics when the name is taken, as registering twice is a programming error.
func Register(name string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := factories[name]; dup {
		panic(fmt.Sprintf("powerstate: source %q registered twice", name))
	}
	factories[name] = f
}

// Registered says whether a source of that name exists.
func Registered(name string) bool {
	mu.RLock()
	defer mu.RUnlock()
	_, ok := factories[name]
	return ok
}

// Names lists the registered sources, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// New builds the source registered under name from its settings.
func New(name string, settings json.RawMessage, env Env) (Source, error) {
	mu.RLock()
	f, ok := factories[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("power-state source %q: %w", name, ErrUnknownSource)
	}
	s, err := f(settings, env)
	if err != nil {
		return nil, fmt.Errorf("power-state source %q: %w", name, err)
	}
	return s, nil
}

// ErrUnknownSource is returned by New for a name nobody registered.
var ErrUnknownSource = errors.New("unknown power-state source")

// ErrNoCluster is returned by a source that reads the cluster and was built
// without a client (the replica does not lead yet).
var ErrNoCluster = errors.New("no cluster client: the source answers only on the leading replica")

// ErrNoSettings is returned by a source that takes no settings and was
// given some.
var ErrNoSettings = errors.New("this source takes no settings")

type noneSource struct{}

func newNone(settings json.RawMessage, _ Env) (Source, error) {
	if len(settings) > 0 && string(settings) != "null" && string(settings) != "{}" {
		return nil, ErrNoSettings
	}
	return noneSource{}, nil
}

func (noneSource) Shutdown(context.Context, Machine) (bool, error) { return false, nil }
func (noneSource) Close() error                                    { return nil }
