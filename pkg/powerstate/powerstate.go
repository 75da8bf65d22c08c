// Package powerstate is the registry of sources that tell whether a machine is
// shut down, for the provider's InstanceShutdown.
package powerstate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// Source tells whether the machine behind a node is shut down (powered off but
// still known). A source that cannot tell returns an error; the node is then
// treated as running.
type Source interface {
	Shutdown(ctx context.Context, node *v1.Node) (bool, error)
}

// Factory builds a Source.
type Factory func() (Source, error)

// None is the name of the default source: no machine is ever shut down.
const None = "none"

var (
	mu        sync.RWMutex
	factories = map[string]Factory{
		None: func() (Source, error) { return noneSource{}, nil },
	}
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

// New builds the source registered under name.
func New(name string) (Source, error) {
	mu.RLock()
	f, ok := factories[name]
	mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("power-state source %q: %w", name, ErrUnknownSource)
	}
	return f()
}

// ErrUnknownSource is returned by New for a name nobody registered.
var ErrUnknownSource = errors.New("unknown power-state source")

type noneSource struct{}

func (noneSource) Shutdown(context.Context, *v1.Node) (bool, error) { return false, nil }
