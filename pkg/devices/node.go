package devices

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Annotation keys.
const (
	// NodeDevicesAnnotation is the Node annotation written by the node agent.
	NodeDevicesAnnotation = "gpuadmit.io/gpu-devices"
	// HAMiNodeRegisterAnnotation is the Node annotation written by HAMi's device plugin.
	HAMiNodeRegisterAnnotation = "hami.io/node-nvidia-register"
	// PodAllocatedAnnotation is the Pod annotation holding per-container device assignments.
	PodAllocatedAnnotation = "hami.io/vgpu-devices-allocated"
)

// Device is one physical GPU or one MIG instance of a node, as reported by the
// node agent in the gpuadmit.io/gpu-devices annotation.
type Device struct {
	UUID       string `json:"uuid"`
	Index      int    `json:"index"`
	Model      string `json:"model,omitempty"`
	MemoryMiB  int64  `json:"memoryMiB"`
	Cores      int64  `json:"cores"`
	SMCount    int64  `json:"smCount,omitempty"`
	MIGEnabled bool   `json:"migEnabled"`
	Healthy    bool   `json:"healthy"`
	// ParentUUID is set for a MIG instance: the UUID of the physical GPU it lives on.
	ParentUUID string `json:"parentUUID,omitempty"`
	// MIGProfile is the MIG profile name of a MIG instance (for example "1g.18gb").
	MIGProfile string `json:"migProfile,omitempty"`
}

// DecodeNodeDevices parses the value of the gpuadmit.io/gpu-devices annotation.
// Unknown fields are accepted (newer agents may add some); missing or invalid
// required fields are errors naming the device and the field.
func DecodeNodeDevices(value string) ([]Device, error) {
	trimmed := strings.TrimSpace(value)
	if trimmed == "" {
		return nil, fmt.Errorf("%s: empty value, want a JSON array of devices", NodeDevicesAnnotation)
	}
	dec := json.NewDecoder(strings.NewReader(trimmed))
	dec.UseNumber()
	var raw []json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of objects: %w", NodeDevicesAnnotation, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: trailing data after the JSON array", NodeDevicesAnnotation)
	}
	out := make([]Device, 0, len(raw))
	seen := make(map[string]int, len(raw))
	for i, item := range raw {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(item, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("%s: device [%d] is not a JSON object", NodeDevicesAnnotation, i)
		}
		var d Device
		if err := json.Unmarshal(item, &d); err != nil {
			return nil, fmt.Errorf("%s: device [%d]: %w", NodeDevicesAnnotation, i, err)
		}
		for _, req := range []string{"uuid", "memoryMiB"} {
			if _, ok := obj[req]; !ok {
				return nil, fmt.Errorf("%s: device [%d]: missing field %q", NodeDevicesAnnotation, i, req)
			}
		}
		if _, ok := obj["cores"]; !ok {
			d.Cores = 100
		}
		if _, ok := obj["healthy"]; !ok {
			d.Healthy = true
		}
		if err := d.Validate(); err != nil {
			return nil, fmt.Errorf("%s: device [%d]: %w", NodeDevicesAnnotation, i, err)
		}
		if j, dup := seen[d.UUID]; dup {
			return nil, fmt.Errorf("%s: device [%d]: uuid %q already used by device [%d]", NodeDevicesAnnotation, i, d.UUID, j)
		}
		seen[d.UUID] = i
		out = append(out, d)
	}
	return out, nil
}

// Validate checks one device's fields.
func (d Device) Validate() error {
	switch {
	case strings.TrimSpace(d.UUID) == "":
		return errors.New("field \"uuid\" is empty")
	case strings.ContainsAny(d.UUID, ",:;"):
		return fmt.Errorf("field \"uuid\" %q contains one of ,:;", d.UUID)
	case d.Index < 0:
		return fmt.Errorf("field \"index\" is negative (%d)", d.Index)
	case d.MemoryMiB <= 0:
		// A device of no memory would resolve whole-card and percentage
		// pods to nothing: a node (or whoever may write its annotations)
		// must not be able to make its pods free.
		return fmt.Errorf("field \"memoryMiB\" must be positive, got %d", d.MemoryMiB)
	case d.Cores < 0 || d.Cores > 100:
		return fmt.Errorf("field \"cores\" must be within 0..100, got %d", d.Cores)
	case d.SMCount < 0:
		return fmt.Errorf("field \"smCount\" is negative (%d)", d.SMCount)
	}
	return nil
}

// EncodeNodeDevices renders devices as the gpuadmit.io/gpu-devices value. The
// output is deterministic (devices in the given order, fields in a fixed
// order) so that an unchanged device list yields a byte-identical annotation.
func EncodeNodeDevices(devs []Device) (string, error) {
	seen := make(map[string]bool, len(devs))
	for i, d := range devs {
		if err := d.Validate(); err != nil {
			return "", fmt.Errorf("%s: device [%d]: %w", NodeDevicesAnnotation, i, err)
		}
		if seen[d.UUID] {
			return "", fmt.Errorf("%s: device [%d]: duplicate uuid %q", NodeDevicesAnnotation, i, d.UUID)
		}
		seen[d.UUID] = true
	}
	if devs == nil {
		devs = []Device{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(devs); err != nil {
		return "", fmt.Errorf("%s: %w", NodeDevicesAnnotation, err)
	}
	return strings.TrimSuffix(buf.String(), "\n"), nil
}
