package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// IgnoredWarning is the one-line warning for the keys a configuration file
// held that gpuadmit does not read ("" when none).
func IgnoredWarning(ignored []string) string {
	if len(ignored) == 0 {
		return ""
	}
	return fmt.Sprintf("config keys gpuadmit does not read (ignored): %s", strings.Join(ignored, ", "))
}

// parseDevices reads a HAMi device-config document (already JSON) into s,
// whose values are kept where the document sets none. The keys gpuadmit
// reads must hold valid values; every other key is returned, sorted, as a
// dotted path under prefix ("devices.nvidia.deviceSplitCount") and
// otherwise ignored.
func parseDevices(js []byte, prefix string, s *effective.Settings) ([]string, error) {
	if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
		return nil, nil
	}
	where := strings.TrimSuffix(prefix, ".")
	if where == "" {
		where = "top level"
	}
	top, err := object(js, where)
	if err != nil {
		return nil, err
	}
	var ignored []string
	for _, key := range sortedKeys(top) {
		if key != "nvidia" {
			ignored = append(ignored, prefix+key)
			continue
		}
		more, err := parseNvidia(top[key], prefix+"nvidia.", s)
		if err != nil {
			return nil, err
		}
		ignored = append(ignored, more...)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s%w", prefix, err)
	}
	sort.Strings(ignored)
	return ignored, nil
}

// parseNvidia reads the keys of the nvidia section gpuadmit uses and
// returns the others.
func parseNvidia(raw json.RawMessage, prefix string, s *effective.Settings) ([]string, error) {
	sec, err := object(raw, strings.TrimSuffix(prefix, "."))
	if err != nil {
		return nil, err
	}
	names := map[string]*corev1.ResourceName{
		"resourceCountName":            &s.Names.Count,
		"resourceMemoryName":           &s.Names.Memory,
		"resourceMemoryPercentageName": &s.Names.MemoryPercentage,
		"resourceCoreName":             &s.Names.Cores,
	}
	ints := map[string]*int64{
		"defaultMemory": &s.DefaultMemory,
		"defaultCores":  &s.DefaultCores,
		"defaultGPUNum": &s.DefaultGPUNum,
		"memoryFactor":  &s.MemoryFactor,
	}
	bools := map[string]*bool{
		// gpuadmit's own key: HAMi always makes whole-card requests exclusive.
		"exclusiveCores": &s.ExclusiveCores,
	}
	var ignored []string
	for _, key := range sortedKeys(sec) {
		val := sec[key]
		switch {
		case names[key] != nil:
			var str string
			if err := json.Unmarshal(val, &str); err != nil || strings.TrimSpace(str) == "" {
				return nil, fmt.Errorf("%s%s: want a non-empty resource name, got %s", prefix, key, val)
			}
			*names[key] = corev1.ResourceName(strings.TrimSpace(str))
		case ints[key] != nil:
			n, err := integer(val)
			if err != nil {
				return nil, fmt.Errorf("%s%s: %w", prefix, key, err)
			}
			*ints[key] = n
		case bools[key] != nil:
			if err := json.Unmarshal(val, bools[key]); err != nil {
				return nil, fmt.Errorf("%s%s: want true or false, got %s", prefix, key, val)
			}
		default:
			ignored = append(ignored, prefix+key)
		}
	}
	return ignored, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func object(js []byte, where string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(js, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s: want a mapping of keys to values", where)
	}
	return m, nil
}

func integer(val json.RawMessage) (int64, error) {
	dec := json.NewDecoder(bytes.NewReader(val))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return 0, fmt.Errorf("want an integer, got %s", val)
	}
	num, ok := v.(json.Number)
	if !ok {
		return 0, fmt.Errorf("want an integer, got %s", val)
	}
	n, err := num.Int64()
	if err != nil {
		return 0, fmt.Errorf("want an integer, got %s", val)
	}
	return n, nil
}
