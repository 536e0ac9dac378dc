package devices

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// HAMiDevice is one device as a HAMi backend registers it, in the
// backend's own units (BackendAnnotations.MemoryUnit and CoreUnit).
type HAMiDevice struct {
	ID    string
	Index int
	// Count is the split count: how many containers may share the device.
	Count int64
	// MemoryMiB is the device's memory as HAMi books it (MiB, after the
	// device plugin's memory scaling).
	MemoryMiB int64
	// Cores is the device's compute as HAMi books it: percent for most
	// backends (after core scaling, so it may exceed 100), AI cores for
	// Ascend, compute units for AMD.
	Cores   int64
	Type    string
	Numa    int64
	Mode    string
	Healthy bool
}

// Validate checks one registered device. HAMi reads every figure as an
// int32; a device without memory or without a share would book nothing.
func (d HAMiDevice) Validate() error {
	if err := validateText(d.ID, d.Type, d.Mode); err != nil {
		return err
	}
	switch {
	case d.Index < 0 || d.Index > math.MaxInt32:
		return fmt.Errorf("field index must be within 0..%d, got %d", math.MaxInt32, d.Index)
	case d.MemoryMiB <= 0 || d.MemoryMiB > math.MaxInt32:
		return fmt.Errorf("field devmem (MiB) must be within 1..%d, got %d", math.MaxInt32, d.MemoryMiB)
	case d.Count <= 0 || d.Count > math.MaxInt32:
		return fmt.Errorf("field count (split count) must be within 1..%d, got %d", math.MaxInt32, d.Count)
	case d.Cores < 0 || d.Cores > math.MaxInt32:
		return fmt.Errorf("field devcore must be within 0..%d, got %d", math.MaxInt32, d.Cores)
	case d.Numa < math.MinInt32 || d.Numa > math.MaxInt32:
		return fmt.Errorf("field numa is out of range, got %d", d.Numa)
	}
	return nil
}

// validateText checks a device's strings: an id a pod assignment can name
// (no separators, no surrounding spaces) and nothing that is not UTF-8 (an
// annotation value is UTF-8).
func validateText(id, typ, mode string) error {
	switch {
	case strings.TrimSpace(id) == "":
		return errors.New("field id is empty")
	case !utf8.ValidString(id) || !utf8.ValidString(typ) || !utf8.ValidString(mode):
		return fmt.Errorf("field id %q, type %q or mode %q is not UTF-8", id, typ, mode)
	case id != strings.TrimSpace(id):
		return fmt.Errorf("field id %q has leading or trailing spaces", id)
	case strings.ContainsAny(id, ",:;"):
		return fmt.Errorf("field id %q contains one of ,:; (the pod assignment format's separators)", id)
	}
	return nil
}

// hamiJSONDevice is one entry of HAMi's JSON registration. encoding/json
// matches keys case-insensitively, as HAMi's own decoder does (Ascend's
// fixtures write "ID", "Devmem", ...); keys HAMi adds (migProfiles,
// custominfo, devicepairscore, ...) are ignored.
type hamiJSONDevice struct {
	ID      string `json:"id"`
	Index   *int64 `json:"index"`
	Count   int64  `json:"count"`
	Devmem  int64  `json:"devmem"`
	Devcore int64  `json:"devcore"`
	Type    string `json:"type"`
	Numa    int64  `json:"numa"`
	Mode    string `json:"mode"`
	Health  bool   `json:"health"`
}

// DecodeHAMiRegister parses a node registration in either of HAMi's
// generic encodings (the value itself says which: JSON starts with '['):
// the JSON array of current device plugins and the colon-separated list
// "id,count,devmem,devcore,type,numa,health[,index,mode]:" (hygon,
// iluvatar, and nvidia before JSON; the last ':' may be left out, and an
// item without index is at its position). key is the annotation's name,
// for the errors. An empty list ("[]" or ":") is no devices; omitted JSON
// fields are zero, as HAMi reads them (its encoder omits zero values: a
// missing "health" is false), except a missing "index", the position.
func DecodeHAMiRegister(key, value string) ([]HAMiDevice, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return nil, fmt.Errorf("%s: empty value", key)
	}
	var devs []HAMiDevice
	var err error
	if strings.HasPrefix(v, "[") {
		devs, err = decodeRegisterJSON(v)
	} else {
		devs, err = decodeRegisterLegacy(v)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	if err := validateHAMiDevices(devs); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return devs, nil
}

// validateHAMiDevices validates every device and refuses a repeated id.
func validateHAMiDevices(devs []HAMiDevice) error {
	seen := make(map[string]int, len(devs))
	for i, d := range devs {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("device [%d]: %w", i, err)
		}
		if j, dup := seen[d.ID]; dup {
			return fmt.Errorf("device [%d]: id %q already used by device [%d]", i, d.ID, j)
		}
		seen[d.ID] = i
	}
	return nil
}

// decodeJSONArray decodes v, a JSON array, into dst.
func decodeJSONArray(v string, dst any) error {
	if !strings.HasPrefix(v, "[") {
		return errors.New("not a JSON array of devices")
	}
	if err := decodeJSON(v, dst); err != nil {
		return fmt.Errorf("not a JSON array of devices: %w", err)
	}
	return nil
}

// decodeJSON decodes the one JSON value of v into dst, refusing trailing data.
func decodeJSON(v string, dst any) error {
	dec := json.NewDecoder(strings.NewReader(v))
	if err := dec.Decode(dst); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("trailing data after the JSON value")
	}
	return nil
}

func decodeRegisterJSON(v string) ([]HAMiDevice, error) {
	var raw []hamiJSONDevice
	if err := decodeJSONArray(v, &raw); err != nil {
		return nil, err
	}
	out := make([]HAMiDevice, 0, len(raw))
	for i, h := range raw {
		idx := int64(i)
		if h.Index != nil {
			idx = *h.Index
		}
		if idx < 0 || idx > math.MaxInt32 {
			return nil, fmt.Errorf("device [%d]: field index must be within 0..%d, got %d", i, math.MaxInt32, idx)
		}
		out = append(out, HAMiDevice{ID: h.ID, Index: int(idx), Count: h.Count, MemoryMiB: h.Devmem, Cores: h.Devcore,
			Type: h.Type, Numa: h.Numa, Mode: h.Mode, Healthy: h.Health})
	}
	return out, nil
}

// decodeRegisterLegacy reads the colon-separated list. Empty items (the
// trailing ':', or a value of only ':') are skipped, as HAMi skips them.
func decodeRegisterLegacy(v string) ([]HAMiDevice, error) {
	out := []HAMiDevice{}
	for i, item := range strings.Split(v, ":") {
		if item == "" {
			continue
		}
		d, err := decodeLegacyItem(item, len(out))
		if err != nil {
			return nil, fmt.Errorf("device [%d] %q: %w", i, item, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// legacyInt parses one integer field of a legacy item.
func legacyInt(f []string, i int, name string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(f[i]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("field %s %q is not an integer", name, f[i])
	}
	return n, nil
}

func decodeLegacyItem(item string, position int) (HAMiDevice, error) {
	f := strings.Split(item, ",")
	if len(f) != 7 && len(f) != 9 {
		return HAMiDevice{}, fmt.Errorf("want 7 comma-separated fields id,count,devmem,devcore,type,numa,health "+
			"or 9 (then index,mode), got %d", len(f))
	}
	d := HAMiDevice{ID: strings.TrimSpace(f[0]), Index: position, Type: f[4], Mode: "hami-core"}
	for _, field := range []struct {
		at   int
		name string
		dst  *int64
	}{{1, "count", &d.Count}, {2, "devmem", &d.MemoryMiB}, {3, "devcore", &d.Cores}, {5, "numa", &d.Numa}} {
		n, err := legacyInt(f, field.at, field.name)
		if err != nil {
			return d, err
		}
		*field.dst = n
	}
	health, err := strconv.ParseBool(strings.TrimSpace(f[6]))
	if err != nil {
		return d, fmt.Errorf("field health %q is not a boolean", f[6])
	}
	d.Healthy = health
	if len(f) == 9 {
		idx, err := legacyInt(f, 7, "index")
		if err != nil {
			return d, err
		}
		if idx < 0 || idx > math.MaxInt32 {
			return d, fmt.Errorf("field index must be within 0..%d, got %d", math.MaxInt32, idx)
		}
		d.Index, d.Mode = int(idx), f[8]
	}
	return d, nil
}

// DecodeNodeRegister parses the value of b.NodeRegister on the node named
// nodeName (the vendor encodings that name no device make the device ids
// from it) into devices in b's units. A backend of EncodingHAMiJSON or
// EncodingHAMiLegacy reads either generic encoding (DecodeHAMiRegister).
// A backend of EncodingCapacity has no annotation to decode: that is an
// error.
func (b BackendAnnotations) DecodeNodeRegister(nodeName, value string) ([]HAMiDevice, error) {
	var devs []HAMiDevice
	var err error
	switch b.NodeEncoding {
	case EncodingHAMiJSON, EncodingHAMiLegacy:
		devs, err = DecodeHAMiRegister(b.NodeRegister, value)
	case EncodingMetaxSGPU:
		devs, err = DecodeMetaxSGPURegister(value)
	case EncodingEnflameDRS:
		devs, err = DecodeEnflameDRSCapacity(nodeName, value)
	default:
		return nil, fmt.Errorf("backend %s registers no node annotation (encoding %q): HAMi derives its devices from node capacity %v",
			b.Backend, b.NodeEncoding, b.NodeCapacity)
	}
	if err != nil {
		return nil, err
	}
	if b.FixedCores > 0 {
		for i := range devs {
			devs[i].Cores = b.FixedCores
		}
	}
	return devs, nil
}
