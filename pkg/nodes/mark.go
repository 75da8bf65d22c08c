package nodes

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// SetMark sets the annotation key of node name to value, or removes it
// when value is "": the marks the leader's node controllers (out of
// service, fencing) leave on the nodes they acted on, so that they undo
// only what they did. A merge patch, so that nothing else of the node is
// written.
func SetMark(ctx context.Context, cs kubernetes.Interface, name, key, value string) error {
	var v any // null removes the key
	if value != "" {
		v = value
	}
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{key: v}}})
	if err != nil {
		return fmt.Errorf("mark node %s: %w", name, err)
	}
	if _, err := cs.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("mark node %s: %w", name, err)
	}
	return nil
}
