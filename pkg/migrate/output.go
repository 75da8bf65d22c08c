package migrate

import (
	"bytes"
	"encoding/json"
	"fmt"

	yaml "go.yaml.in/yaml/v3"

	"github.com/metal-ccm/metal-ccm/pkg/config"
)

// Render writes cfg as a cloud-config document: the fields in the order of
// the config's types (names first, as the docs write them), and no empty
// sections or structs. The document is parsed back with the project's own
// loader, so that what is printed is a config the manager starts with; a
// config it refuses is an error that names each field (the document is
// returned with it, to be shown).
func Render(cfg *config.CloudConfig, header string) ([]byte, error) {
	sections := []struct {
		name string
		v    any
	}{
		{"loadBalancer", cfg.LoadBalancer},
		{"bgp", cfg.BGP},
		{"l2", cfg.L2},
	}
	doc := &yaml.Node{Kind: yaml.MappingNode}
	doc.Content = append(doc.Content, scalar("apiVersion"), scalar(config.APIVersion), scalar("kind"), scalar(config.Kind))
	for _, s := range sections {
		n, err := tree(s.v)
		if err != nil {
			return nil, fmt.Errorf("render %s: %w", s.name, err)
		}
		if n != nil {
			doc.Content = append(doc.Content, scalar(s.name), n)
		}
	}
	var b bytes.Buffer
	b.WriteString(header)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	if _, err := config.Parse(b.Bytes()); err != nil {
		return b.Bytes(), fmt.Errorf("the converted config is refused: %w", err)
	}
	return b.Bytes(), nil
}

func scalar(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// tree is v as a YAML node with its fields in their JSON order (JSON is
// YAML, and the node keeps the order the struct gave), without empty
// mappings; nil when nothing is left.
func tree(v any) (*yaml.Node, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal(js, &n); err != nil {
		return nil, err
	}
	return prune(n.Content[0]), nil
}

// prune drops the empty mappings of n (a struct whose fields are all left
// out), keeps an empty mapping in a list (an advertisement with every
// field defaulted is one), and writes scalars in the plain style, quoted
// only where YAML would read them as another type.
func prune(n *yaml.Node) *yaml.Node {
	n.Style = 0
	switch n.Kind {
	case yaml.MappingNode:
		var kept []*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if v := prune(n.Content[i+1]); v != nil {
				n.Content[i].Style = 0
				kept = append(kept, n.Content[i], v)
			}
		}
		n.Content = kept
		if len(kept) == 0 {
			return nil
		}
	case yaml.SequenceNode:
		for i, e := range n.Content {
			if p := prune(e); p != nil {
				n.Content[i] = p
			} else {
				n.Content[i] = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}
			}
		}
	}
	return n
}
