package devices

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Annotations of the backends whose encoding is the vendor's own.
const (
	// MetaxSGPURegisterAnnotation is the Node annotation MetaX's device
	// plugin lists its sGPU-capable cards in.
	MetaxSGPURegisterAnnotation = "metax-tech.com/node-gpu-devices"
	// MetaxSGPUAllocatedAnnotation is the Pod annotation HAMi's scheduler
	// writes MetaX's copy of an sGPU assignment to (JSON, one array per container).
	MetaxSGPUAllocatedAnnotation = "metax-tech.com/gpu-devices-allocated"
	// EnflameDRSCapacityAnnotation is the Node annotation Enflame's device
	// plugin announces its DRS (shared GCU) capacity in.
	EnflameDRSCapacityAnnotation = "enflame.com/gcu-drs-capacity"
)

// metaxSDevice is one card of MetaX's sGPU registration.
type metaxSDevice struct {
	UUID          string `json:"uuid"`
	TotalDevCount int64  `json:"totalDevCount"`
	TotalCompute  int64  `json:"totalCompute"`
	TotalVRam     int64  `json:"totalVRam"`
	Numa          int64  `json:"numa"`
	Healthy       bool   `json:"healthy"`
}

// DecodeMetaxSGPURegister parses metax-tech.com/node-gpu-devices, MetaX's
// JSON array of cards ({"uuid","totalDevCount","totalCompute","totalVRam"
// (MiB),"numa","healthy",...}), into devices the way HAMi converts them:
// count totalDevCount, memory totalVRam, cores totalCompute, type
// "Metax-SGPU", index the position.
func DecodeMetaxSGPURegister(value string) ([]HAMiDevice, error) {
	v := strings.TrimSpace(value)
	if v == "" {
		return nil, fmt.Errorf("%s: empty value", MetaxSGPURegisterAnnotation)
	}
	var raw []metaxSDevice
	if err := decodeJSONArray(v, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", MetaxSGPURegisterAnnotation, err)
	}
	out := make([]HAMiDevice, 0, len(raw))
	for i, m := range raw {
		out = append(out, HAMiDevice{ID: m.UUID, Index: i, Count: m.TotalDevCount, MemoryMiB: m.TotalVRam,
			Cores: m.TotalCompute, Type: "Metax-SGPU", Numa: m.Numa, Healthy: m.Healthy})
	}
	if err := validateHAMiDevices(out); err != nil {
		return nil, fmt.Errorf("%s: %w", MetaxSGPURegisterAnnotation, err)
	}
	return out, nil
}

// drsCapacity is Enflame's DRS capacity annotation.
type drsCapacity struct {
	Devices  []drsDevice       `json:"devices"`
	Profiles map[string]string `json:"profiles"`
}

// drsDevice is one device of the DRS capacity; its "minor" is the device
// plugin's, not needed here.
type drsDevice struct {
	Index    string          `json:"index"`
	Capacity json.RawMessage `json:"capacity"`
}

// DecodeEnflameDRSCapacity parses enflame.com/gcu-drs-capacity of the node
// named nodeName ({"devices":[{"index":"0","minor":"0","capacity":6}],
// "profiles":{"1g.6gb":"0","6g.40gb":"2",...}}) into devices the way HAMi
// makes them: id "<node>-enflame-drs-<index>", count the capacity (DRS
// slices), memory the largest profile's (GiB × 1024 MiB), cores 100, type
// "Enflame", healthy. HAMi skips a profile name it cannot read; here that
// is an error, as is an index or a capacity that is not a whole number.
func DecodeEnflameDRSCapacity(nodeName, value string) ([]HAMiDevice, error) {
	key := EnflameDRSCapacityAnnotation
	if strings.TrimSpace(nodeName) == "" || strings.ContainsAny(nodeName, ",:; ") {
		return nil, fmt.Errorf("%s: node name %q cannot make device ids", key, nodeName)
	}
	v := strings.TrimSpace(value)
	if !strings.HasPrefix(v, "{") {
		return nil, fmt.Errorf("%s: not a JSON object of devices and profiles", key)
	}
	var spec drsCapacity
	if err := decodeJSON(v, &spec); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object of devices and profiles: %w", key, err)
	}
	memMiB, err := drsMemoryMiB(spec.Profiles)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	out := make([]HAMiDevice, 0, len(spec.Devices))
	for i, d := range spec.Devices {
		idx, count, err := drsDeviceFigures(d, i)
		if err != nil {
			return nil, fmt.Errorf("%s: device [%d]: %w", key, i, err)
		}
		out = append(out, HAMiDevice{ID: fmt.Sprintf("%s-enflame-drs-%d", nodeName, idx), Index: idx, Count: count,
			MemoryMiB: memMiB, Cores: 100, Type: "Enflame", Healthy: true})
	}
	if err := validateHAMiDevices(out); err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	return out, nil
}

// drsMemoryMiB is the memory of the largest DRS profile ("<slices>g.<GiB>gb").
func drsMemoryMiB(profiles map[string]string) (int64, error) {
	if len(profiles) == 0 {
		return 0, errors.New("no DRS profiles")
	}
	var maxGiB int64
	for name := range profiles {
		slicePart, gibPart, ok := strings.Cut(strings.ToLower(strings.TrimSpace(name)), ".")
		s, err1 := strconv.ParseInt(strings.TrimSuffix(slicePart, "g"), 10, 32)
		g, err2 := strconv.ParseInt(strings.TrimSuffix(gibPart, "gb"), 10, 32)
		if !ok || err1 != nil || err2 != nil || s <= 0 || g <= 0 {
			return 0, fmt.Errorf("profile %q is not of the form <slices>g.<GiB>gb", name)
		}
		maxGiB = max(maxGiB, g)
	}
	if maxGiB > math.MaxInt32/1024 {
		return 0, fmt.Errorf("profile memory of %d GiB is out of range", maxGiB)
	}
	return maxGiB * 1024, nil
}

// drsDeviceFigures returns a DRS device's index (its position when unset)
// and capacity (a JSON integer or a string of one).
func drsDeviceFigures(d drsDevice, position int) (int, int64, error) {
	idx := position
	if s := strings.TrimSpace(d.Index); s != "" {
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("field index %q is not a non-negative integer", d.Index)
		}
		idx = int(n)
	}
	raw := bytes.TrimSpace(d.Capacity)
	if len(raw) == 0 {
		return 0, 0, errors.New("field capacity is missing")
	}
	var quoted string
	if json.Unmarshal(raw, &quoted) == nil {
		raw = []byte(strings.TrimSpace(quoted))
	}
	count, err := strconv.ParseInt(string(raw), 10, 32)
	if err != nil || count <= 0 {
		return 0, 0, fmt.Errorf("field capacity %s is not a positive integer", d.Capacity)
	}
	return idx, count, nil
}
