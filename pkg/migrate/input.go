package migrate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// Object is one Kubernetes object of the input, its body kept as JSON for
// the converter that knows its kind.
type Object struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	// Raw is the whole object as JSON.
	Raw json.RawMessage `json:"-"`
}

// Ref names the object in a report: "Kind namespace/name".
func (o *Object) Ref() string {
	if o.Metadata.Namespace == "" {
		return o.Kind + " " + o.Metadata.Name
	}
	return o.Kind + " " + o.Metadata.Namespace + "/" + o.Metadata.Name
}

// DecodeInto reads the object's body into v strictly: each field v does not
// know is returned as a path ("spec.foo"), so that a caller reports it
// rather than dropping it unseen.
func (o *Object) DecodeInto(v any) (unknown []string, err error) {
	strict, err := sigsjson.UnmarshalStrict(o.Raw, v, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.Ref(), err)
	}
	for _, e := range strict {
		var fe sigsjson.FieldError
		if errors.As(e, &fe) {
			unknown = append(unknown, fe.FieldPath())
		} else {
			unknown = append(unknown, e.Error())
		}
	}
	return unknown, nil
}

// ReadObjects reads every object of a stream of YAML (or JSON) documents
// separated by "---"; a List (as kubectl get -o yaml prints) gives its
// items. Empty documents are skipped. name names the stream in errors.
func ReadObjects(r io.Reader, name string) ([]Object, error) {
	var out []Object
	docs := utilyaml.NewYAMLReader(bufio.NewReader(r))
	for n := 1; ; n++ {
		doc, err := docs.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: read document %d: %w", name, n, err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		objs, err := DecodeJSON(js)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", name, n, err)
		}
		out = append(out, objs...)
	}
}

// DecodeJSON reads one object as JSON, or a List's items.
func DecodeJSON(js []byte) ([]Object, error) {
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, nil // a document of comments only
	}
	var o Object
	if err := json.Unmarshal(js, &o); err != nil {
		return nil, fmt.Errorf("not an object: %w", err)
	}
	o.Raw = js
	if !strings.HasSuffix(o.Kind, "List") {
		if o.Kind == "" {
			return nil, errors.New("no kind")
		}
		return []Object{o}, nil
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", o.Kind, err)
	}
	var out []Object
	for i, item := range list.Items {
		objs, err := DecodeJSON(item)
		if err != nil {
			return nil, fmt.Errorf("%s items[%d]: %w", o.Kind, i, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}
