package migrate

import (
	"fmt"
	"io"
)

// Item is one thing of the input that the output does not carry as it was:
// a field with no equivalent, or one that needs a step by hand.
type Item struct {
	// Object names the input object: its kind, namespace and name
	// ("BGPPeer metallb-system/tor1").
	Object string
	// Field is the path of the field in the object ("spec.vrf").
	Field string
	// Message says what the output does instead, and what to do.
	Message string
}

func (i Item) String() string {
	if i.Field == "" {
		return fmt.Sprintf("%s: %s", i.Object, i.Message)
	}
	return fmt.Sprintf("%s: %s: %s", i.Object, i.Field, i.Message)
}

// Report is the items of one conversion, in the order they were found.
type Report struct {
	Items []Item
}

// Add records an item; message is formatted with args.
func (r *Report) Add(object, field, message string, args ...any) {
	if len(args) > 0 {
		message = fmt.Sprintf(message, args...)
	}
	r.Items = append(r.Items, Item{Object: object, Field: field, Message: message})
}

// Write prints one item a line, or a line that says there is none.
func (r *Report) Write(w io.Writer) error {
	if len(r.Items) == 0 {
		_, err := fmt.Fprintln(w, "every field has an equivalent: nothing to do by hand")
		return err
	}
	for _, it := range r.Items {
		if _, err := fmt.Fprintln(w, it.String()); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	return nil
}
