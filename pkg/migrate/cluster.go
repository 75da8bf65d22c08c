package migrate

import (
	"context"
	"encoding/json"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Resource is one resource to read from the cluster: the first of its
// versions that the API server serves.
type Resource struct {
	Group    string
	Versions []string
	Resource string
}

// ReadCluster lists each resource in namespace ("" for all) with the
// dynamic client. A resource the API server does not serve in any of the
// versions (its CRD not installed) gives no objects.
func ReadCluster(ctx context.Context, client dynamic.Interface, namespace string, resources []Resource) ([]Object, error) {
	var out []Object
	for _, r := range resources {
		objs, err := readResource(ctx, client, namespace, r)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}

func readResource(ctx context.Context, client dynamic.Interface, namespace string, r Resource) ([]Object, error) {
	for _, v := range r.Versions {
		gvr := schema.GroupVersionResource{Group: r.Group, Version: v, Resource: r.Resource}
		list, err := client.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", gvr.GroupResource(), err)
		}
		var out []Object
		for i := range list.Items {
			js, err := json.Marshal(list.Items[i].Object)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", gvr.GroupResource(), list.Items[i].GetName(), err)
			}
			objs, err := DecodeJSON(js)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", gvr.GroupResource(), list.Items[i].GetName(), err)
			}
			out = append(out, objs...)
		}
		return out, nil
	}
	return nil, nil
}

// ReadNamed gets one object of a resource (its first version) by name.
func ReadNamed(ctx context.Context, client dynamic.Interface, namespace, name string, r Resource) ([]Object, error) {
	gvr := schema.GroupVersionResource{Group: r.Group, Version: r.Versions[0], Resource: r.Resource}
	u, err := client.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s %s/%s: %w", gvr.GroupResource(), namespace, name, err)
	}
	js, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", gvr.GroupResource(), namespace, name, err)
	}
	return DecodeJSON(js)
}
