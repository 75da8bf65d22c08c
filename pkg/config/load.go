package config

import (
	"errors"
	"fmt"
	"io"
	"os"

	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// ErrInvalid marks every error that comes from a config document's content, as
// opposed to one from reading it.
var ErrInvalid = errors.New("invalid cloud config")

// LoadFile reads, decodes, defaults and validates the cloud-config at path.
func LoadFile(path string) (*CloudConfig, error) {
	data, err := os.ReadFile(path) //nolint:gosec // the path is the operator's --cloud-config flag
	if err != nil {
		return nil, fmt.Errorf("read cloud config: %w", err)
	}
	return Parse(data)
}

// Load is LoadFile for a reader; a nil reader gives the defaults.
func Load(r io.Reader) (*CloudConfig, error) {
	if r == nil {
		return Parse(nil)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read cloud config: %w", err)
	}
	return Parse(data)
}

// Parse decodes a YAML or JSON document strictly (unknown and duplicate fields
// are errors, each reported with its path), applies defaults and validates the
// result. Every problem found is reported at once; the error wraps ErrInvalid.
func Parse(data []byte) (*CloudConfig, error) {
	cfg := &CloudConfig{}
	var strictErrs []error
	if len(data) > 0 {
		js, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			return nil, fmt.Errorf("%w: decode: %w", ErrInvalid, err)
		}
		// Unknown and duplicate fields do not stop decoding: they are reported
		// together with the validation errors of the fields that were known.
		strictErrs, err = sigsjson.UnmarshalStrict(js, cfg, sigsjson.DisallowUnknownFields)
		if err != nil {
			return nil, fmt.Errorf("%w: decode: %w", ErrInvalid, err)
		}
	} else {
		cfg.APIVersion, cfg.Kind = APIVersion, Kind
	}
	cfg.Default()
	if err := cfg.validate(); len(strictErrs) > 0 || len(err) > 0 {
		all := make([]error, 0, len(strictErrs)+len(err))
		all = append(all, strictErrs...)
		for _, e := range err {
			all = append(all, e)
		}
		return nil, fmt.Errorf("%w:\n%w", ErrInvalid, errors.Join(all...))
	}
	return cfg, nil
}
