// Package config loads gpuadmit's configuration file. Its nvidia section uses
// HAMi's device-config keys (resource names, defaults, memory factor) so an
// existing HAMi device config works as is. The keys gpuadmit reads are
// validated strictly (a bad value is an error naming the key); every other
// key (HAMi's scheduler and device-plugin keys, other vendors' sections, keys
// HAMi adds in later releases) is reported once as ignored, never an error.
package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// Config is gpuadmit's configuration.
type Config struct {
	// NVIDIA holds the resource names and defaults of HAMi's nvidia section.
	NVIDIA effective.Settings
}

// Default returns the configuration used when no file is given (HAMi's defaults).
func Default() Config {
	return Config{NVIDIA: effective.DefaultSettings()}
}

// Load reads and validates a configuration file. The returned strings name
// the keys of the file that gpuadmit does not read (see Parse).
func Load(path string) (Config, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, nil, fmt.Errorf("reading config: %w", err)
	}
	cfg, ignored, err := Parse(data)
	if err != nil {
		return Config{}, nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, ignored, nil
}

// IgnoredWarning is the one-line warning for the keys Parse ignored ("" when none).
func IgnoredWarning(ignored []string) string {
	if len(ignored) == 0 {
		return ""
	}
	return fmt.Sprintf("config keys gpuadmit does not read (ignored): %s", strings.Join(ignored, ", "))
}

// Parse reads a configuration document (YAML or JSON). Absent keys keep
// their defaults. The keys gpuadmit reads must hold valid values; every
// other key is returned, sorted, as a dotted path ("nvidia.deviceSplitCount",
// "cambricon") and otherwise ignored.
func Parse(data []byte) (Config, []string, error) {
	cfg := Default()
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return cfg, nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
		return cfg, nil, nil
	}
	top, err := object(js, "top level")
	if err != nil {
		return cfg, nil, err
	}
	if _, ok := top["kind"]; ok {
		return cfg, nil, fmt.Errorf("kind %s: not a device configuration (want a mapping with an \"nvidia\" section, as HAMi's device-config.yaml)", top["kind"])
	}
	var ignored []string
	for _, key := range sortedKeys(top) {
		if key != "nvidia" {
			ignored = append(ignored, key)
			continue
		}
		more, err := parseNvidia(top[key], &cfg.NVIDIA)
		if err != nil {
			return cfg, nil, err
		}
		ignored = append(ignored, more...)
	}
	if err := cfg.NVIDIA.Validate(); err != nil {
		return cfg, nil, err
	}
	sort.Strings(ignored)
	return cfg, ignored, nil
}

// parseNvidia reads the keys of the nvidia section gpuadmit uses and
// returns the others.
func parseNvidia(raw json.RawMessage, s *effective.Settings) ([]string, error) {
	sec, err := object(raw, "nvidia")
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
				return nil, fmt.Errorf("nvidia.%s: want a non-empty resource name, got %s", key, val)
			}
			*names[key] = corev1.ResourceName(strings.TrimSpace(str))
		case ints[key] != nil:
			n, err := integer(val)
			if err != nil {
				return nil, fmt.Errorf("nvidia.%s: %w", key, err)
			}
			*ints[key] = n
		case bools[key] != nil:
			if err := json.Unmarshal(val, bools[key]); err != nil {
				return nil, fmt.Errorf("nvidia.%s: want true or false, got %s", key, val)
			}
		default:
			ignored = append(ignored, "nvidia."+key)
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
