package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// The configuration file's version.
const (
	APIVersion = "config.gpuadmit.io/v1alpha1"
	Kind       = "Configuration"
)

// Values of Admission.Unsatisfiable and Admission.StaleFeed.
const (
	UnsatisfiableDeny     = "Deny"
	UnsatisfiableWarn     = "Warn"
	StaleFeedReservations = "Reservations"
	StaleFeedDeny         = "Deny"
)

// Configuration is gpuadmit's configuration, defaults applied and validated.
type Configuration struct {
	// Devices are the resource names and the defaults of HAMi's nvidia
	// device config: how a container's request is read.
	Devices effective.Settings
	// Admission tunes decisions and reservations.
	Admission Admission
	// Policy says where operators' Rego policies come from.
	Policy Policy
}

// Admission tunes decisions and reservations (key admission).
type Admission struct {
	// NearLimitPercent: warn when a namespace reaches this share of a limit
	// after the pod (nearLimitPercent, default 90).
	NearLimitPercent int64
	// Unsatisfiable: what to do with a device request no eligible node can
	// hold: Deny (default) or Warn.
	Unsatisfiable string
	// PolicyEvaluationTimeout bounds one policy evaluation
	// (policyEvaluationTimeout, default 1s).
	PolicyEvaluationTimeout time.Duration
	// ReviewTimeout bounds one review, waiting for earlier decisions in the
	// namespace and writing the reservation included; keep it below the
	// webhook configurations' timeoutSeconds (reviewTimeout, default 8s).
	ReviewTimeout time.Duration
	// StaleFeed: what the webhook does while a watch is stale:
	// Reservations (default: keep deciding, admitted pods stay reserved) or
	// Deny (refuse GPU pods and fail readiness).
	StaleFeed string
	// Reservations: how absence of an admitted pod is confirmed.
	Reservations Reservations
	// Watches: when a watch counts as stale.
	Watches Watches
}

// Reservations tune the confirmation of reservations (key
// admission.reservations).
type Reservations struct {
	// ConfirmAfter: first read of an admitted pod by name, after this
	// replica first saw its reservation (confirmAfter; default 0s: the
	// longest timeoutSeconds of the cluster's other validating webhooks on
	// pod creates, plus 2s).
	ConfirmAfter time.Duration
	// RecheckMax bounds the backoff between reads of a pod the watch has
	// not recorded yet (recheckMax, default 30s).
	RecheckMax time.Duration
	// ReadsPerSecond bounds the reads (readsPerSecond, default 20).
	ReadsPerSecond int
	// MaxPerNamespace bounds the reservations one namespace's GPUUsage
	// holds (maxPerNamespace, default 500); an admission that would add
	// one more is refused until some end.
	MaxPerNamespace int
}

// Watches tune the staleness check (key admission.watches).
type Watches struct {
	// ProbeEvery: how often the API server's resourceVersion is read
	// (probeEvery, default 15s).
	ProbeEvery time.Duration
	// StaleAfter: a watch that has not caught up for this long is stale
	// (staleAfter, default 3m).
	StaleAfter time.Duration
}

// Policy is where operators' policies come from (key policy).
type Policy struct {
	// ConfigMapSelector selects policy ConfigMaps in the server's namespace
	// (configMapSelector, default "gpuadmit.io/policy=true").
	ConfigMapSelector string
	// Directory adds the Rego modules of a directory (directory, default none).
	Directory string
}

// Default returns the configuration used when no file is given.
func Default() Configuration {
	var c Configuration
	c.Devices = effective.DefaultSettings()
	SetDefaults(&c)
	return c
}

// SetDefaults sets every unset value of c to its default: the one place
// defaults live.
func SetDefaults(c *Configuration) {
	if c.Devices.Names.Count == "" && c.Devices.Names.Memory == "" {
		c.Devices = effective.DefaultSettings()
	}
	a := &c.Admission
	setIfZero(&a.NearLimitPercent, 90)
	setIfZero(&a.Unsatisfiable, UnsatisfiableDeny)
	setIfZero(&a.PolicyEvaluationTimeout, time.Second)
	setIfZero(&a.ReviewTimeout, 8*time.Second)
	setIfZero(&a.StaleFeed, StaleFeedReservations)
	setIfZero(&a.Reservations.RecheckMax, 30*time.Second)
	setIfZero(&a.Reservations.ReadsPerSecond, 20)
	setIfZero(&a.Reservations.MaxPerNamespace, 500)
	setIfZero(&a.Watches.ProbeEvery, 15*time.Second)
	setIfZero(&a.Watches.StaleAfter, 3*time.Minute)
	setIfZero(&c.Policy.ConfigMapSelector, "gpuadmit.io/policy=true")
}

func setIfZero[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// Load reads, defaults and validates a configuration file. The returned
// strings name the keys of its devices section that gpuadmit does not read.
func Load(path string) (Configuration, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Configuration{}, nil, fmt.Errorf("reading config: %w", err)
	}
	cfg, ignored, err := parse(data, filepath.Dir(path))
	if err != nil {
		return Configuration{}, nil, fmt.Errorf("config %s: %w", path, err)
	}
	return cfg, ignored, nil
}

// Parse reads a configuration document (YAML or JSON); relative paths in it
// are relative to the working directory.
func Parse(data []byte) (Configuration, []string, error) { return parse(data, ".") }

// file is the document as written; gpuadmit's own sections are decoded
// strictly (an unknown key is an error).
type file struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Devices    json.RawMessage `json:"devices"`
	Admission  *struct {
		NearLimitPercent        *int64  `json:"nearLimitPercent"`
		Unsatisfiable           *string `json:"unsatisfiable"`
		PolicyEvaluationTimeout *string `json:"policyEvaluationTimeout"`
		ReviewTimeout           *string `json:"reviewTimeout"`
		StaleFeed               *string `json:"staleFeed"`
		Reservations            *struct {
			ConfirmAfter    *string `json:"confirmAfter"`
			RecheckMax      *string `json:"recheckMax"`
			ReadsPerSecond  *int    `json:"readsPerSecond"`
			MaxPerNamespace *int    `json:"maxPerNamespace"`
		} `json:"reservations"`
		Watches *struct {
			ProbeEvery *string `json:"probeEvery"`
			StaleAfter *string `json:"staleAfter"`
		} `json:"watches"`
	} `json:"admission"`
	Policy *struct {
		ConfigMapSelector *string `json:"configMapSelector"`
		Directory         *string `json:"directory"`
	} `json:"policy"`
}

func parse(data []byte, dir string) (Configuration, []string, error) {
	js, err := yaml.YAMLToJSON(data)
	if err != nil {
		return Configuration{}, nil, fmt.Errorf("not valid YAML: %w", err)
	}
	var head struct {
		APIVersion string          `json:"apiVersion"`
		Kind       json.RawMessage `json:"kind"`
	}
	if t := bytes.TrimSpace(js); len(t) > 0 && t[0] == '{' {
		if err := json.Unmarshal(js, &head); err != nil {
			return Configuration{}, nil, fmt.Errorf("top level: %w", err)
		}
	}
	cfg := Default()
	if head.APIVersion == "" && len(head.Kind) == 0 {
		// A bare HAMi device config: the devices section alone.
		ignored, err := parseDevices(js, "", &cfg.Devices)
		return cfg, ignored, err
	}
	if head.APIVersion != APIVersion || string(head.Kind) != `"`+Kind+`"` {
		return Configuration{}, nil, fmt.Errorf("apiVersion %q, kind %s: want apiVersion %s, kind %s (or a HAMi device config with an \"nvidia\" section)",
			head.APIVersion, head.Kind, APIVersion, Kind)
	}
	var f file
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return Configuration{}, nil, fmt.Errorf("%w", unknownField(err))
	}
	ignored, err := cfg.devices(f.Devices, dir)
	if err != nil {
		return Configuration{}, nil, err
	}
	if err := f.apply(&cfg); err != nil {
		return Configuration{}, nil, err
	}
	return cfg, ignored, cfg.Validate()
}

// unknownField names the key of a strict decoding error.
func unknownField(err error) error {
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return fmt.Errorf("unknown key %s (see docs/configuration.md)", f)
	}
	return err
}

// devices reads the devices section: HAMi's keys inline, or hamiConfigPath.
func (c *Configuration) devices(raw json.RawMessage, dir string) ([]string, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var ref struct {
		HAMiConfigPath *string `json:"hamiConfigPath"`
	}
	if err := json.Unmarshal(raw, &ref); err == nil && ref.HAMiConfigPath != nil {
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(raw, &keys)
		if len(keys) > 1 {
			return nil, fmt.Errorf("devices: hamiConfigPath excludes inline keys")
		}
		path := *ref.HAMiConfigPath
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, path)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("devices.hamiConfigPath: %w", err)
		}
		js, err := yaml.YAMLToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("devices.hamiConfigPath %s: not valid YAML: %w", path, err)
		}
		return parseDevices(js, "", &c.Devices)
	}
	return parseDevices(raw, "devices.", &c.Devices)
}
