package agent

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/metal-ccm/metal-ccm/pkg/announcer"
	"github.com/metal-ccm/metal-ccm/pkg/nodes"
)

// fakeAPI answers the agent's requests as an API server does, in JSON: a
// Node by name, lists, and watches (with the initial events when asked, as
// client-go's reflector asks first); anything else is not found. Each request
// must prefer protobuf, as client-go's typed clients of these types do.
type fakeAPI struct {
	t        *testing.T
	node     *v1.Node
	services []v1.Service
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.Header.Get("Accept"), "application/vnd.kubernetes.protobuf") {
		f.t.Errorf("%s: Accept %q, want protobuf first, as client-go's typed clients", r.URL.Path, r.Header.Get("Accept"))
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	q := r.URL.Query()
	switch {
	case r.URL.Path == "/api/v1/nodes/"+f.node.Name:
		_ = enc.Encode(f.node)
	case r.URL.Path == "/api/v1/services" && q.Get("watch") == "true":
		if q.Get("sendInitialEvents") == "true" {
			for i := range f.services {
				_ = enc.Encode(map[string]any{"type": "ADDED", "object": &f.services[i]})
			}
			_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": &v1.Service{
				TypeMeta:   metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}},
			}})
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	case r.URL.Path == "/api/v1/services":
		_ = enc.Encode(&v1.ServiceList{TypeMeta: metav1.TypeMeta{Kind: "ServiceList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "5"}, Items: f.services})
	case r.URL.Path == "/apis/discovery.k8s.io/v1/endpointslices":
		_ = enc.Encode(&discoveryv1.EndpointSliceList{TypeMeta: metav1.TypeMeta{Kind: "EndpointSliceList", APIVersion: "discovery.k8s.io/v1"}})
	default:
		http.NotFound(w, r)
	}
}

func TestClient(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate}}
	svc := func(name string) v1.Service {
		return v1.Service{
			TypeMeta:   metav1.TypeMeta{Kind: "Service", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "4", ManagedFields: managed},
			Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer},
		}
	}
	api := &fakeAPI{
		t: t,
		node: &v1.Node{
			TypeMeta:   metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: "n1", ManagedFields: managed},
			Status:     v1.NodeStatus{Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "198.18.116.1"}}},
		},
		services: []v1.Service{svc("a"), svc("b")},
	}
	srv := httptest.NewServer(api)
	defer srv.Close()
	c, err := NewClient(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	n := &v1.Node{}
	if err := c.Nodes.Get(ctx, "n1", n); err != nil {
		t.Fatalf("Get node: %v", err)
	}
	if ip, ok := nodes.InternalIP(n, true); !ok || ip.String() != "198.18.116.1" {
		t.Errorf("node's InternalIP = %v, %v; want 198.18.116.1", ip, ok)
	}
	if err := c.Nodes.Get(ctx, "n2", &v1.Node{}); err == nil {
		t.Error("Get of a missing node: no error")
	}

	list, err := c.EndpointSlices.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("List EndpointSlices: %v", err)
	}
	if _, ok := list.(*discoveryv1.EndpointSliceList); !ok {
		t.Errorf("List EndpointSlices: %T", list)
	}

	// The informers take the announcer's handlers and index, and cache the
	// Services (through the reflector's watch or list) without
	// managedFields.
	infs := c.informers(newFreshness(klog.Background()))
	announcer.New(infs, nil, func(*v1.Service) bool { return true }, announcer.Options{})
	inf := infs.Services
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("Services informer did not sync")
	}
	keys := inf.GetIndexer().ListKeys()
	if len(keys) != 2 {
		t.Fatalf("cached Services %v, want ns/a and ns/b", keys)
	}
	for _, o := range inf.GetIndexer().List() {
		if s, ok := o.(*v1.Service); !ok {
			t.Errorf("cached a %T, want a Service", o)
		} else if s.ManagedFields != nil {
			t.Errorf("cached %s with managedFields %v, want none", s.Name, s.ManagedFields)
		}
	}
}
