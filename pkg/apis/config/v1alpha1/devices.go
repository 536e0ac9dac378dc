package v1alpha1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Devices is HAMi's device config (its device-config.yaml): inline, or
// the path of such a file, plus gpuadmit's own gpushare section. Every
// HAMi backend section is read; the keys a family's booking rule reads are
// typed and decoded strictly (a wrong type is an error naming the key);
// every other key (HAMi's scheduler and device-plugin keys, keys a later
// HAMi release adds, unknown sections) is kept in Ignored and reported
// once, never an error. A section that is present governs its families.
type Devices struct {
	// HAMiConfigPath names a HAMi device-config.yaml to read instead of
	// inline keys (relative to the configuration file); pkg/config reads
	// it when it loads the configuration.
	HAMiConfigPath *string `json:"hamiConfigPath,omitempty"`
	// HAMiConfigMap names a ConfigMap holding HAMi's device-config.yaml
	// (its key device-config.yaml), "namespace/name" or "name" (in the
	// webhook's namespace), to read instead of inline keys: HAMi's chart
	// renders it as kube-system/hami-scheduler-device. The webhook reads it
	// through the API server when it starts (pkg/config.ReadHAMiConfigMap);
	// excludes HAMiConfigPath.
	HAMiConfigMap *string `json:"hamiConfigMap,omitempty"`
	// Nvidia is the section of NVIDIA GPUs (always governed).
	Nvidia    *NvidiaDevices    `json:"nvidia,omitempty"`
	Cambricon *NamedDevices     `json:"cambricon,omitempty"`
	Hygon     *HygonDevices     `json:"hygon,omitempty"`
	Metax     *MetaxDevices     `json:"metax,omitempty"`
	Enflame   *EnflameDevices   `json:"enflame,omitempty"`
	Mthreads  *NamedDevices     `json:"mthreads,omitempty"`
	Iluvatars []IluvatarDevices `json:"iluvatars,omitempty"`
	Kunlun    *KunlunDevices    `json:"kunlun,omitempty"`
	AWSNeuron *AWSNeuronDevices `json:"awsneuron,omitempty"`
	AMD       *NamedDevices     `json:"amd,omitempty"`
	Vastai    *CountDevices     `json:"vastai,omitempty"`
	Biren     *CountDevices     `json:"biren,omitempty"`
	VNPUs     *VNPUDevices      `json:"vnpus,omitempty"`
	// Ascend and Iluvatar switch on the families of vnpus and iluvatars:
	// HAMi's scheduler starts those backends only with --enable-ascend and
	// --enable-iluvatar (its chart's devices.ascend.enabled and
	// devices.iluvatar.enabled, false by default), so gpuadmit governs
	// them only when enabled is true here (default false).
	Ascend   *BackendSwitch `json:"ascend,omitempty"`
	Iluvatar *BackendSwitch `json:"iluvatar,omitempty"`
	// Gpushare is gpuadmit's own section (strict): Aliyun's gpushare.
	Gpushare *GpushareDevices `json:"gpushare,omitempty"`

	// Ignored are the dotted paths of the keys gpuadmit does not read,
	// sorted (not part of the file's form). An entry of a list is named by
	// its chipName (vnpus[910B2].runtimeClassName), else by its index.
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
}

// UnmarshalJSON reads the section leniently: known keys typed, the others
// listed in Ignored under "devices.".
func (d *Devices) UnmarshalJSON(data []byte) error { return d.decode(data, "devices") }

// DecodeHAMi reads a bare HAMi device-config document (already JSON) into
// d, its ignored keys listed without a prefix.
func (d *Devices) DecodeHAMi(data []byte) error { return d.decode(data, "") }

// section allocates the field of d of a section of plain keys and returns
// where its keys decode (nil for any other key).
func (d *Devices) section(key string) fields {
	switch key {
	case "nvidia":
		d.Nvidia = &NvidiaDevices{}
		return d.Nvidia.fields()
	case "cambricon":
		d.Cambricon = &NamedDevices{}
		return d.Cambricon.fields()
	case "hygon":
		d.Hygon = &HygonDevices{}
		return d.Hygon.fields()
	case "metax":
		d.Metax = &MetaxDevices{}
		return d.Metax.fields()
	case "enflame":
		d.Enflame = &EnflameDevices{}
		return d.Enflame.fields()
	case "mthreads":
		d.Mthreads = &NamedDevices{}
		return d.Mthreads.fields()
	case "kunlun":
		d.Kunlun = &KunlunDevices{}
		return d.Kunlun.fields()
	case "awsneuron":
		d.AWSNeuron = &AWSNeuronDevices{}
		return d.AWSNeuron.fields()
	case "amd":
		d.AMD = &NamedDevices{}
		return d.AMD.fields()
	case "vastai":
		d.Vastai = &CountDevices{}
		return d.Vastai.fields()
	case "biren":
		d.Biren = &CountDevices{}
		return d.Biren.fields()
	case "ascend":
		d.Ascend = &BackendSwitch{}
		return d.Ascend.fields()
	case "iluvatar":
		d.Iluvatar = &BackendSwitch{}
		return d.Iluvatar.fields()
	}
	return nil
}

func (d *Devices) decode(data []byte, path string) error {
	top, err := object(data, path)
	if err != nil {
		return err
	}
	var dec decoder
	for _, key := range sortedKeys(top) {
		raw, p := top[key], join(path, key)
		switch {
		case refWant(key) != "" && path == "":
			dec.ignore(p) // a HAMi file does not point at another
		case refWant(key) != "":
			err = d.ref(key, raw, p)
		case key == "iluvatars":
			d.Iluvatars, err = dec.iluvatars(raw, p)
		case key == "vnpus":
			d.VNPUs = &VNPUDevices{}
			d.VNPUs.Configs, err = dec.vnpus(raw, p)
		case key == "gpushare":
			d.Gpushare = &GpushareDevices{}
			err = dec.strict(raw, p, fields{"memoryUnit": &d.Gpushare.MemoryUnit})
		default:
			if f := d.section(key); f != nil {
				err = dec.keys(raw, p, f)
			} else if err = misspelt(p, key, sectionKeys()); err == nil {
				dec.ignore(p)
			}
		}
		if err != nil {
			return err
		}
	}
	slices.Sort(dec.ignored)
	d.Ignored = dec.ignored
	return nil
}

// refWant is what a key naming where HAMi's device config is read instead
// of inline keys wants ("" for any other key).
func refWant(key string) string {
	switch key {
	case "hamiConfigPath":
		return "a file path"
	case "hamiConfigMap":
		return "a ConfigMap as namespace/name or name"
	}
	return ""
}

// ref decodes hamiConfigPath or hamiConfigMap (key, at p): a non-empty string.
func (d *Devices) ref(key string, raw []byte, p string) error {
	dst := &d.HAMiConfigPath
	if key == "hamiConfigMap" {
		dst = &d.HAMiConfigMap
	}
	if err := json.Unmarshal(raw, dst); err != nil || *dst == nil || **dst == "" {
		return fmt.Errorf("%s: want %s, got %s", p, refWant(key), raw)
	}
	return nil
}

// fields maps the typed keys of a section to where they decode.
type fields map[string]any

// decoder collects the ignored keys of one devices section.
type decoder struct{ ignored []string }

func (dec *decoder) ignore(path string) { dec.ignored = append(dec.ignored, path) }

// keys decodes the section raw at path: its keys in fs strictly, the
// others ignored.
func (dec *decoder) keys(raw json.RawMessage, path string, fs fields) error {
	m, err := object(raw, path)
	if err != nil {
		return err
	}
	return dec.keysOf(m, path, fs)
}

func (dec *decoder) keysOf(m map[string]json.RawMessage, path string, fs fields) error {
	for _, key := range sortedKeys(m) {
		dst, ok := fs[key]
		if !ok {
			if err := misspelt(join(path, key), key, keysOf(fs)); err != nil {
				return err
			}
			dec.ignore(join(path, key))
			continue
		}
		if err := strictValue(m[key], key, dst); err != nil {
			return fmt.Errorf("%s: %w", join(path, key), err)
		}
	}
	return nil
}

// strict decodes gpuadmit's own section: an unknown key is an error.
func (dec *decoder) strict(raw json.RawMessage, path string, fs fields) error {
	m, err := object(raw, path)
	if err != nil {
		return err
	}
	for _, key := range sortedKeys(m) {
		if _, ok := fs[key]; !ok {
			if err := misspelt(join(path, key), key, keysOf(fs)); err != nil {
				return err
			}
			return fmt.Errorf("%s: unknown key (gpuadmit's own section, see docs/configuration.md)", join(path, key))
		}
	}
	return dec.keysOf(m, path, fs)
}

// strictValue decodes one value into dst, refusing a value of another
// type (an integer written as 1.5 or "1", a name written as a number).
func strictValue(raw json.RawMessage, key string, dst any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("want %s, got %s", kindOf(key, dst), raw)
	}
	return nil
}

func kindOf(key string, dst any) string {
	switch dst.(type) {
	case **string:
		if strings.HasPrefix(key, "resource") {
			return "a resource name"
		}
		return "a string"
	case **int64:
		return "an integer"
	case **bool:
		return "true or false"
	case **MemoryUnit:
		return "GiB or MiB"
	}
	return "a value"
}

// object reads a mapping; null is an empty one.
func object(data []byte, where string) (map[string]json.RawMessage, error) {
	if where == "" {
		where = "top level"
	}
	if string(bytes.TrimSpace(data)) == "null" {
		return map[string]json.RawMessage{}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s: want a mapping of keys to values", where)
	}
	return m, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
