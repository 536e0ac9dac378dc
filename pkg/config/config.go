// Package config loads gpuadmit's configuration file. Its nvidia section uses
// HAMi's device-config keys (resource names, defaults, memory factor) so an
// existing HAMi device config works as is; keys HAMi defines for its own
// scheduler and device plugin are accepted and ignored, anything else is an
// error that names the key.
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

// hamiVendorSection reports top-level sections of HAMi's device config that
// configure other vendors' devices; gpuadmit ignores them.
func hamiVendorSection(key string) bool {
	switch key {
	case "cambricon", "hygon", "metax", "mthreads", "iluvatar", "iluvatars", "enflame", "kunlun",
		"awsneuron", "ascend", "vnpus", "amd":
		return true
	}
	return false
}

// hamiIgnoredNvidiaKey reports nvidia keys HAMi uses for scheduling or its
// device plugin; they do not change how gpuadmit counts demand.
func hamiIgnoredNvidiaKey(key string) bool {
	switch key {
	case "resourcePriorityName", "overwriteEnv", "deviceSplitCount", "deviceMemoryScaling",
		"deviceCoreScaling", "gpuCorePolicy", "libCudaLogLevel", "migStrategy", "disablecorelimit",
		"knownMigGeometries", "preConfiguredDeviceMemory", "runtimeSocket":
		return true
	}
	return false
}

// Load reads and validates a configuration file.
func Load(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("reading config: %w", err)
	}
	cfg, err := Parse(data)
	if err != nil {
		return Config{}, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, nil
}

// Parse reads a configuration document (YAML or JSON). Absent keys keep their
// defaults; unknown keys and bad values are errors naming the key.
func Parse(data []byte) (Config, error) {
	cfg := Default()
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return cfg, fmt.Errorf("not valid YAML: %w", err)
	}
	if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
		return cfg, nil
	}
	top, err := object(js, "top level")
	if err != nil {
		return cfg, err
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		raw := top[key]
		switch {
		case key == "nvidia":
			if err := parseNvidia(raw, &cfg.NVIDIA); err != nil {
				return cfg, err
			}
		case hamiVendorSection(key):
		default:
			return cfg, fmt.Errorf("unknown top-level key %q (gpuadmit reads \"nvidia\")", key)
		}
	}
	if err := cfg.NVIDIA.Validate(); err != nil {
		return cfg, err
	}
	return cfg, nil
}

func parseNvidia(raw json.RawMessage, s *effective.Settings) error {
	sec, err := object(raw, "nvidia")
	if err != nil {
		return err
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
	keys := make([]string, 0, len(sec))
	for k := range sec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, key := range keys {
		val := sec[key]
		switch {
		case names[key] != nil:
			var str string
			if err := json.Unmarshal(val, &str); err != nil || strings.TrimSpace(str) == "" {
				return fmt.Errorf("nvidia.%s: want a non-empty resource name, got %s", key, val)
			}
			*names[key] = corev1.ResourceName(strings.TrimSpace(str))
		case ints[key] != nil:
			n, err := integer(val)
			if err != nil {
				return fmt.Errorf("nvidia.%s: %w", key, err)
			}
			*ints[key] = n
		case hamiIgnoredNvidiaKey(key):
		default:
			return fmt.Errorf("nvidia.%s: unknown key (gpuadmit reads resourceCountName, resourceMemoryName, "+
				"resourceMemoryPercentageName, resourceCoreName, defaultMemory, defaultCores, defaultGPUNum, memoryFactor)", key)
		}
	}
	return nil
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
