package nodes

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Patcher patches Nodes: client-go's typed client of Nodes
// (cs.CoreV1().Nodes()) is one. An interface, not the clientset, because
// the node agent links this package and must not link every API group's
// client (cmd/metal-node-agent's deps test).
type Patcher interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*v1.Node, error)
}

// SetMark sets the annotation key of node name to value, or removes it
// when value is "": the marks the leader's node controllers (out of
// service, fencing) leave on the nodes they acted on, so that they undo
// only what they did. A merge patch, so that nothing else of the node is
// written.
func SetMark(ctx context.Context, p Patcher, name, key, value string) error {
	var v any // null removes the key
	if value != "" {
		v = value
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	if err != nil {
		return fmt.Errorf("mark node %s: %w", name, err)
	}
	if _, err := p.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("mark node %s: %w", name, err)
	}
	return nil
}
