package agent

import (
	"context"
	"fmt"
	"net/http"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Client reads what the agent watches: Nodes and Services (core/v1) and
// EndpointSlices (discovery/v1). It is built over REST clients of those two
// group versions and a scheme of their types only, and does what client-go's
// typed clients do for a get, a list and a watch. Those typed clients, even
// one of them, register every API group in their scheme, and their generic
// base links client-go's fake client and with it OpenAPI models: together
// most of the agent's executable, and so of its RSS, which counts the pages
// of the executable it touches (docs/performance.md, scenario 0b).
type Client struct {
	Nodes, Services, EndpointSlices Resource

	coordination rest.Interface
	// apps reads the agent's DaemonSet as JSON by its absolute path when
	// the agent stops (stopping.go): any of the REST clients will do.
	apps rest.Interface
}

// Resource is one resource of the agent's Client, all namespaces.
type Resource struct {
	client  rest.Interface
	params  runtime.ParameterCodec
	name    string
	newList func() runtime.Object
}

// NewClient builds a Client from rc, with the defaults of client-go's typed
// clients of those groups: protobuf preferred, JSON accepted, CBOR only when
// client-go's feature gate asks for it.
func NewClient(rc *rest.Config) (*Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1.AddToScheme, discoveryv1.AddToScheme, coordinationv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, fmt.Errorf("client scheme: %w", err)
		}
	}
	// ListOptions and the other option types as query parameters, as in
	// client-go's scheme.
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	neg := rest.CodecFactoryForGeneratedClient(scheme, serializer.NewCodecFactory(scheme)).WithoutConversion()
	params := runtime.NewParameterCodec(scheme)

	hc, err := rest.HTTPClientFor(rc)
	if err != nil {
		return nil, fmt.Errorf("API client: %w", err)
	}
	core, err := restClient(rc, hc, neg, "/api", v1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	disc, err := restClient(rc, hc, neg, "/apis", discoveryv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	coord, err := restClient(rc, hc, neg, "/apis", coordinationv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &Client{
		coordination:   coord,
		apps:           coord,
		Nodes:          Resource{core, params, "nodes", func() runtime.Object { return &v1.NodeList{} }},
		Services:       Resource{core, params, "services", func() runtime.Object { return &v1.ServiceList{} }},
		EndpointSlices: Resource{disc, params, "endpointslices", func() runtime.Object { return &discoveryv1.EndpointSliceList{} }},
	}, nil
}

// restClient is a REST client of one group version over hc, which the
// agent's clients share (one connection pool).
func restClient(rc *rest.Config, hc *http.Client, neg runtime.NegotiatedSerializer, apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := rest.CopyConfig(rc)
	c.APIPath = apiPath
	c.GroupVersion = &gv
	c.NegotiatedSerializer = neg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	r, err := rest.RESTClientForConfigAndClient(c, hc)
	if err != nil {
		return nil, fmt.Errorf("API client for %s: %w", gv, err)
	}
	return r, nil
}

// Get reads the object name (of a cluster-scoped resource) into into.
func (r Resource) Get(ctx context.Context, name string, into runtime.Object) error {
	if err := r.client.Get().UseProtobufAsDefault().Resource(r.name).Name(name).Do(ctx).Into(into); err != nil {
		return fmt.Errorf("get %s %s: %w", r.name, name, err)
	}
	return nil
}

// List lists the resource's objects, as a typed client's List.
func (r Resource) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	list := r.newList()
	err := r.client.Get().UseProtobufAsDefault().Resource(r.name).
		VersionedParams(&opts, r.params).Timeout(timeout(opts)).
		Do(ctx).Into(list)
	return list, err
}

// Watch watches the resource's objects, as a typed client's Watch.
func (r Resource) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.client.Get().UseProtobufAsDefault().Resource(r.name).
		VersionedParams(&opts, r.params).Timeout(timeout(opts)).
		Watch(ctx)
}

// timeout is a list's or watch's timeoutSeconds as the request's timeout.
func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

// Leases are the Leases of one namespace, as the L2 witness uses them: get
// and update only (pkg/l2/witness).
type Leases struct {
	client    rest.Interface
	namespace string
}

// Leases of namespace.
func (c *Client) Leases(namespace string) Leases { return Leases{c.coordination, namespace} }

// Get reads the Lease name.
func (l Leases) Get(ctx context.Context, name string) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	if err := l.client.Get().UseProtobufAsDefault().Namespace(l.namespace).Resource("leases").Name(name).Do(ctx).Into(out); err != nil {
		return nil, fmt.Errorf("get lease %s/%s: %w", l.namespace, name, err)
	}
	return out, nil
}

// Update writes lease, as read with its resourceVersion.
func (l Leases) Update(ctx context.Context, lease *coordinationv1.Lease) (*coordinationv1.Lease, error) {
	out := &coordinationv1.Lease{}
	if err := l.client.Put().UseProtobufAsDefault().Namespace(l.namespace).Resource("leases").Name(lease.Name).Body(lease).Do(ctx).Into(out); err != nil {
		return nil, fmt.Errorf("update lease %s/%s: %w", l.namespace, lease.Name, err)
	}
	return out, nil
}
