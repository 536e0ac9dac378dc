package devices

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// hamiDevice is one entry of HAMi's JSON node registration.
type hamiDevice struct {
	ID      string `json:"id"`
	Index   *int   `json:"index"`
	Count   int64  `json:"count"`
	Devmem  int64  `json:"devmem"`
	Devcore int64  `json:"devcore"`
	Type    string `json:"type"`
	Numa    int64  `json:"numa"`
	Mode    string `json:"mode"`
	Health  bool   `json:"health"`
}

// DecodeHAMiNodeRegister parses hami.io/node-nvidia-register. Both of HAMi's
// encodings are read: the JSON array of current releases
// ([{"id":..,"count":..,"devmem":..,"devcore":..,"type":..,"numa":..,"health":..}])
// and the older colon-separated list "id,count,devmem,devcore,type,numa,health:".
func DecodeHAMiNodeRegister(value string) ([]Device, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return nil, fmt.Errorf("%s: empty value", HAMiNodeRegisterAnnotation)
	}
	var devs []Device
	var err error
	if strings.HasPrefix(v, "[") {
		devs, err = decodeHAMiJSON(v)
	} else {
		devs, err = decodeHAMiLegacy(v)
	}
	if err != nil {
		return nil, err
	}
	seen := make(map[string]int, len(devs))
	for i, d := range devs {
		if err := d.Validate(); err != nil {
			return nil, fmt.Errorf("%s: device [%d]: %w", HAMiNodeRegisterAnnotation, i, err)
		}
		if j, dup := seen[d.UUID]; dup {
			return nil, fmt.Errorf("%s: device [%d]: id %q already used by device [%d]", HAMiNodeRegisterAnnotation, i, d.UUID, j)
		}
		seen[d.UUID] = i
	}
	return devs, nil
}

func decodeHAMiJSON(v string) ([]Device, error) {
	var raw []hamiDevice
	dec := json.NewDecoder(strings.NewReader(v))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("%s: not a JSON array of devices: %w", HAMiNodeRegisterAnnotation, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: trailing data after the JSON array", HAMiNodeRegisterAnnotation)
	}
	out := make([]Device, 0, len(raw))
	for i, h := range raw {
		idx := i
		if h.Index != nil {
			idx = *h.Index
		}
		out = append(out, Device{UUID: h.ID, Index: idx, Model: h.Type, MemoryMiB: h.Devmem, Cores: h.Devcore, Healthy: h.Health})
	}
	return out, nil
}

func decodeHAMiLegacy(v string) ([]Device, error) {
	var out []Device
	for i, item := range strings.Split(strings.TrimSuffix(v, ":"), ":") {
		f := strings.Split(item, ",")
		if len(f) < 7 {
			return nil, fmt.Errorf("%s: device [%d] %q: want 7 comma-separated fields id,count,devmem,devcore,type,numa,health, got %d",
				HAMiNodeRegisterAnnotation, i, item, len(f))
		}
		nums := make([]int64, 3)
		for j, name := range []string{"count", "devmem", "devcore"} {
			n, err := strconv.ParseInt(strings.TrimSpace(f[j+1]), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: device [%d]: field %s %q is not an integer", HAMiNodeRegisterAnnotation, i, name, f[j+1])
			}
			nums[j] = n
		}
		health, err := strconv.ParseBool(strings.TrimSpace(f[6]))
		if err != nil {
			return nil, fmt.Errorf("%s: device [%d]: field health %q is not a boolean", HAMiNodeRegisterAnnotation, i, f[6])
		}
		out = append(out, Device{UUID: strings.TrimSpace(f[0]), Index: i, Model: f[4], MemoryMiB: nums[1], Cores: nums[2], Healthy: health})
	}
	return out, nil
}

// EncodeHAMiNodeRegister renders devices in HAMi's JSON registration format
// (count 10 per device, HAMi's default split count).
func EncodeHAMiNodeRegister(devs []Device) (string, error) {
	raw := make([]hamiDevice, 0, len(devs))
	for i, d := range devs {
		if err := d.Validate(); err != nil {
			return "", fmt.Errorf("%s: device [%d]: %w", HAMiNodeRegisterAnnotation, i, err)
		}
		idx := d.Index
		raw = append(raw, hamiDevice{ID: d.UUID, Index: &idx, Count: 10, Devmem: d.MemoryMiB, Devcore: d.Cores, Type: d.Model, Mode: "hami-core", Health: d.Healthy})
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", HAMiNodeRegisterAnnotation, err)
	}
	return string(b), nil
}
