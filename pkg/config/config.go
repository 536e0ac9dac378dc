package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
)

// Configuration is gpuadmit's configuration: the versioned type itself.
type Configuration = configv1alpha1.Configuration

// Default returns the configuration used when no file is given.
func Default() *Configuration {
	c := &Configuration{}
	SetDefaults(c)
	return c
}

// Load reads, defaults and validates a configuration file. The returned
// strings name the keys of its devices section that gpuadmit does not read.
func Load(path string) (*Configuration, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading config: %w", err)
	}
	cfg, ignored, err := parse(data, filepath.Dir(path))
	if err != nil {
		return nil, nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, ignored, nil
}

// Parse reads a configuration document (YAML or JSON); relative paths in it
// are relative to the working directory.
func Parse(data []byte) (*Configuration, []string, error) { return parse(data, ".") }

// codecs decode configuration files strictly: an unknown or duplicate key
// of gpuadmit's own sections is an error (the devices section is HAMi's
// and reads its own keys: configv1alpha1.Devices).
func codecs() serializer.CodecFactory {
	scheme := runtime.NewScheme()
	if err := configv1alpha1.AddToScheme(scheme); err != nil {
		panic(err) // a programming error: the scheme is ours
	}
	scheme.AddTypeDefaultingFunc(&Configuration{}, func(obj any) { SetDefaults(obj.(*Configuration)) })
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict)
}

func parse(data []byte, dir string) (*Configuration, []string, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, nil, fmt.Errorf("not valid YAML: %w", err)
	}
	var head struct {
		APIVersion string          `json:"apiVersion"`
		Kind       json.RawMessage `json:"kind"`
	}
	if t := bytes.TrimSpace(js); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(js, &head); err != nil {
			return nil, nil, fmt.Errorf("top level: %w", err)
		}
	}
	cfg := &Configuration{}
	switch {
	case head.APIVersion == "" && len(head.Kind) == 0:
		err = bareHAMi(js, cfg)
	case head.APIVersion != configv1alpha1.SchemeGroupVersion.String() || string(head.Kind) != `"`+configv1alpha1.Kind+`"`:
		err = fmt.Errorf("apiVersion %q, kind %s: want apiVersion %s, kind %s (or a HAMi device config with an \"nvidia\" section)",
			head.APIVersion, head.Kind, configv1alpha1.SchemeGroupVersion, configv1alpha1.Kind)
	default:
		err = decode(data, js, dir, cfg)
	}
	if err != nil {
		return nil, nil, err
	}
	SetDefaults(cfg)
	if errs := Validate(cfg); len(errs) > 0 {
		return nil, nil, errs.ToAggregate()
	}
	return cfg, cfg.Devices.Ignored, nil
}

// bareHAMi reads a HAMi device config (no apiVersion) as the devices
// section, every other value at its default.
func bareHAMi(js []byte, cfg *Configuration) error {
	cfg.Devices = &configv1alpha1.Devices{}
	if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
		return nil
	}
	return cfg.Devices.DecodeHAMi(js)
}

// decode reads a versioned configuration (data as written, js as JSON)
// through the strict codec, then the HAMi file its devices section names.
func decode(data, js []byte, dir string, cfg *Configuration) error {
	if err := pathAlone(js); err != nil {
		return err
	}
	if err := runtime.DecodeInto(codecs().UniversalDecoder(), data, cfg); err != nil {
		if errs := badDurations(js); len(errs) > 0 {
			return errs.ToAggregate()
		}
		return keyed(err)
	}
	d := cfg.Devices
	if d == nil || d.HAMiConfigPath == nil {
		return nil
	}
	path := *d.HAMiConfigPath
	if !filepath.IsAbs(path) {
		path = filepath.Join(dir, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("devices.hamiConfigPath: %w", err)
	}
	hjs, err := yaml.YAMLToJSON(data)
	if err != nil {
		return fmt.Errorf("devices.hamiConfigPath %s: not valid YAML: %w", path, err)
	}
	read := &configv1alpha1.Devices{}
	if err := read.DecodeHAMi(hjs); err != nil {
		return fmt.Errorf("devices.hamiConfigPath %s: %w", path, err)
	}
	read.HAMiConfigPath = d.HAMiConfigPath
	if d.Gpushare != nil {
		read.Gpushare = d.Gpushare
	}
	read.Ascend, read.Iluvatar = d.Ascend, d.Iluvatar // HAMi's scheduler flags, never in its file
	cfg.Devices = read
	return nil
}

// pathAlone: devices.hamiConfigPath (or hamiConfigMap) excludes the inline
// HAMi keys (not gpushare, gpuadmit's own section, nor the ascend and iluvatar
// switches, HAMi's scheduler flags: they stand beside the file) and the other.
func pathAlone(js []byte) error {
	var sections struct {
		Devices map[string]json.RawMessage `json:"devices"`
	}
	if json.Unmarshal(js, &sections) != nil {
		return nil
	}
	inline := len(sections.Devices)
	for _, own := range []string{"gpushare", "ascend", "iluvatar"} {
		if _, ok := sections.Devices[own]; ok {
			inline--
		}
	}
	_, path := sections.Devices["hamiConfigPath"]
	_, cm := sections.Devices["hamiConfigMap"]
	switch {
	case path && cm:
		return errors.New("devices: hamiConfigPath and hamiConfigMap exclude each other (HAMi's device config is read from one place)")
	case path && inline > 1:
		return errors.New("devices: hamiConfigPath excludes inline keys (but gpushare, ascend and iluvatar)")
	case cm && inline > 1:
		return errors.New("devices: hamiConfigMap excludes inline keys (but gpushare, ascend and iluvatar)")
	}
	return nil
}

// keyed rewords the strict decoder's errors to name the key, and the key
// meant when one of the configuration's is within two edits of it.
func keyed(err error) error {
	if !runtime.IsStrictDecodingError(err) {
		return err
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "strict decoding error: ")
	msg = unknownField.ReplaceAllStringFunc(msg, func(m string) string {
		path := unknownField.FindStringSubmatch(m)[1]
		if meant, ok := nearestPath(path); ok {
			return fmt.Sprintf("unknown key %q: did you mean %s?", path, meant)
		}
		return fmt.Sprintf("unknown key %q", path)
	})
	return fmt.Errorf("%s (see docs/configuration.md)", msg)
}

// unknownField matches the strict decoder's words for an unknown key.
var unknownField = regexp.MustCompile(`unknown field "([^"]*)"`)

// nearestPath is the key of the configuration (dotted) nearest to path, a
// key it does not have, at the same place: the keys beside its last part.
func nearestPath(path string) (string, bool) {
	parent, last := "", path
	if i := strings.LastIndex(path, "."); i >= 0 {
		parent, last = path[:i+1], path[i+1:]
	}
	var beside []string
	for _, k := range Keys() {
		rest, ok := strings.CutPrefix(k, parent)
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, ".")
		name, _, _ = strings.Cut(name, "[]")
		if !slices.Contains(beside, name) {
			beside = append(beside, name)
		}
	}
	meant, ok := configv1alpha1.Nearest(last, beside)
	return parent + meant, ok
}

// IgnoredWarning is the one-line warning for the keys a configuration file
// held that gpuadmit does not read ("" when none).
func IgnoredWarning(ignored []string) string {
	if len(ignored) == 0 {
		return ""
	}
	return fmt.Sprintf("config keys gpuadmit does not read (ignored): %s", strings.Join(ignored, ", "))
}
