package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Devices is HAMi's device config (its device-config.yaml): inline, or
// the path of such a file. The keys gpuadmit reads are typed and decoded
// strictly (a wrong type is an error); every other key (HAMi's scheduler
// and device-plugin keys, other vendors' sections, keys a later HAMi
// release adds) is kept in Ignored and reported once, never an error.
type Devices struct {
	// HAMiConfigPath names a HAMi device-config.yaml to read instead of
	// inline keys (relative to the configuration file); pkg/config reads
	// it when it loads the configuration.
	HAMiConfigPath *string `json:"hamiConfigPath,omitempty"`
	// Nvidia is the section of NVIDIA GPUs.
	Nvidia *NvidiaDevices `json:"nvidia,omitempty"`

	// Ignored are the dotted paths of the keys gpuadmit does not read,
	// sorted (not part of the file's form).
	Ignored []string `json:"-"`
}

// NvidiaDevices are the keys of HAMi's nvidia section gpuadmit reads.
type NvidiaDevices struct {
	// Resource names (defaults nvidia.com/gpu, nvidia.com/gpumem,
	// nvidia.com/gpumem-percentage, nvidia.com/gpucores).
	ResourceCountName            *string `json:"resourceCountName,omitempty"`
	ResourceMemoryName           *string `json:"resourceMemoryName,omitempty"`
	ResourceMemoryPercentageName *string `json:"resourceMemoryPercentageName,omitempty"`
	ResourceCoreName             *string `json:"resourceCoreName,omitempty"`
	// DefaultMemory (MiB), DefaultCores and DefaultGPUNum are what HAMi
	// books when a container leaves them out (defaults 0, 0, 1);
	// MemoryFactor multiplies a gpumem request (default 1).
	DefaultMemory *int64 `json:"defaultMemory,omitempty"`
	DefaultCores  *int64 `json:"defaultCores,omitempty"`
	DefaultGPUNum *int64 `json:"defaultGPUNum,omitempty"`
	MemoryFactor  *int64 `json:"memoryFactor,omitempty"`
	// ExclusiveCores is gpuadmit's own key: a whole-card request (gpumem
	// unset or 100 %) books all of its cores, as HAMi does (default true).
	ExclusiveCores *bool `json:"exclusiveCores,omitempty"`

	// Ignored are the keys of the section gpuadmit does not read, sorted.
	Ignored []string `json:"-"`
}

// UnmarshalJSON reads the section leniently: known keys typed, the others
// listed in Ignored under "devices.".
func (d *Devices) UnmarshalJSON(data []byte) error { return d.decode(data, "devices.") }

// DecodeHAMi reads a bare HAMi device-config document (already JSON) into
// d, its ignored keys listed without a prefix.
func (d *Devices) DecodeHAMi(data []byte) error { return d.decode(data, "") }

func (d *Devices) decode(data []byte, prefix string) error {
	top, err := object(data, strings.TrimSuffix(prefix, "."))
	if err != nil {
		return err
	}
	var ignored []string
	for key, raw := range top {
		switch key {
		case "hamiConfigPath":
			if prefix == "" {
				ignored = append(ignored, key) // a HAMi file does not point at another
				continue
			}
			if err := json.Unmarshal(raw, &d.HAMiConfigPath); err != nil || d.HAMiConfigPath == nil || *d.HAMiConfigPath == "" {
				return fmt.Errorf("%shamiConfigPath: want a file path, got %s", prefix, raw)
			}
		case "nvidia":
			d.Nvidia = &NvidiaDevices{}
			if err := d.Nvidia.decode(raw, prefix+"nvidia."); err != nil {
				return err
			}
			ignored = append(ignored, d.Nvidia.Ignored...)
		default:
			ignored = append(ignored, prefix+key)
		}
	}
	slices.Sort(ignored)
	d.Ignored = ignored
	return nil
}

func (n *NvidiaDevices) decode(data []byte, prefix string) error {
	sec, err := object(data, strings.TrimSuffix(prefix, "."))
	if err != nil {
		return err
	}
	fields := map[string]any{
		"resourceCountName": &n.ResourceCountName, "resourceMemoryName": &n.ResourceMemoryName,
		"resourceMemoryPercentageName": &n.ResourceMemoryPercentageName, "resourceCoreName": &n.ResourceCoreName,
		"defaultMemory": &n.DefaultMemory, "defaultCores": &n.DefaultCores, "defaultGPUNum": &n.DefaultGPUNum,
		"memoryFactor": &n.MemoryFactor, "exclusiveCores": &n.ExclusiveCores,
	}
	for key, raw := range sec {
		f, ok := fields[key]
		if !ok {
			n.Ignored = append(n.Ignored, prefix+key)
			continue
		}
		if err := strictValue(raw, f); err != nil {
			return fmt.Errorf("%s%s: %w", prefix, key, err)
		}
	}
	slices.Sort(n.Ignored)
	return nil
}

// strictValue decodes one value into dst, refusing a value of another
// type (an integer written as 1.5 or "1", a name written as a number).
func strictValue(raw json.RawMessage, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("want %s, got %s", kindOf(dst), raw)
	}
	return nil
}

func kindOf(dst any) string {
	switch dst.(type) {
	case **string:
		return "a resource name"
	case **int64:
		return "an integer"
	case **bool:
		return "true or false"
	}
	return "a value"
}

func object(data []byte, where string) (map[string]json.RawMessage, error) {
	if where == "" {
		where = "top level"
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s: want a mapping of keys to values", where)
	}
	return m, nil
}
