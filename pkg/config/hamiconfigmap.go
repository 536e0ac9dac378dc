package config

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
)

// HAMiConfigMapKey is the key of HAMi's device config in its ConfigMap, as
// HAMi's chart renders it (<release>-scheduler-device).
const HAMiConfigMapKey = "device-config.yaml"

// GetConfigMap returns the data of ConfigMap namespace/name, the API
// server's error as it is (the caller's client: the webhook's
// ServiceAccount, or the command line's user).
type GetConfigMap func(ctx context.Context, namespace, name string) (map[string]string, error)

// HAMiConfigMapRef is the ConfigMap devices.hamiConfigMap names:
// "namespace/name", or "name" in namespace (the webhook's). ok is false
// when the configuration names none.
func HAMiConfigMapRef(c *Configuration, namespace string) (ns, name string, ok bool) {
	if c == nil || c.Devices == nil || c.Devices.HAMiConfigMap == nil {
		return "", "", false
	}
	ref := *c.Devices.HAMiConfigMap
	if ns, name, found := strings.Cut(ref, "/"); found {
		return ns, name, true
	}
	return namespace, ref, true
}

// ReadHAMiConfigMap reads HAMi's device config from the ConfigMap that
// devices.hamiConfigMap names (nothing when it names none), as
// devices.hamiConfigPath reads a file: its sections replace c's (gpushare,
// gpuadmit's own, stays), then defaults and validation run again. It
// returns the keys gpuadmit does not read. A ConfigMap that cannot be read,
// lacks the key or does not decode is an error naming it: never a
// configuration that governs only nvidia's defaults in its place.
func ReadHAMiConfigMap(ctx context.Context, c *Configuration, namespace string, get GetConfigMap) ([]string, error) {
	ns, name, ok := HAMiConfigMapRef(c, namespace)
	if !ok {
		return nil, nil
	}
	where := fmt.Sprintf("devices.hamiConfigMap: ConfigMap %s/%s", ns, name)
	data, err := get(ctx, ns, name)
	if err != nil {
		return nil, fmt.Errorf("%s (HAMi's device config): %w", where, err)
	}
	text, ok := data[HAMiConfigMapKey]
	if !ok {
		return nil, fmt.Errorf("%s has no key %s (HAMi's chart writes its device config there)", where, HAMiConfigMapKey)
	}
	js, err := yaml.YAMLToJSON([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("%s, key %s: not valid YAML: %w", where, HAMiConfigMapKey, err)
	}
	read := &configv1alpha1.Devices{}
	if err := read.DecodeHAMi(js); err != nil {
		return nil, fmt.Errorf("%s, key %s: %w", where, HAMiConfigMapKey, err)
	}
	read.HAMiConfigMap, read.Gpushare = c.Devices.HAMiConfigMap, c.Devices.Gpushare
	read.Ascend, read.Iluvatar = c.Devices.Ascend, c.Devices.Iluvatar
	c.Devices = read
	SetDefaults(c)
	if errs := Validate(c); len(errs) > 0 {
		return nil, fmt.Errorf("%s: %w", where, errs.ToAggregate())
	}
	return read.Ignored, nil
}

// validateHAMiConfigMap: devices.hamiConfigMap is "namespace/name" or
// "name", a namespace's and a ConfigMap's valid names.
func validateHAMiConfigMap(d *configv1alpha1.Devices) field.ErrorList {
	if d == nil || d.HAMiConfigMap == nil {
		return nil
	}
	p, ref := field.NewPath("devices", "hamiConfigMap"), *d.HAMiConfigMap
	ns, name, found := strings.Cut(ref, "/")
	if !found {
		ns, name = "", ref
	}
	var why []string
	if found {
		why = append(why, validation.IsDNS1123Label(ns)...)
	}
	why = append(why, validation.IsDNS1123Subdomain(name)...)
	if len(why) > 0 || strings.Contains(name, "/") {
		return field.ErrorList{field.Invalid(p, ref, "want a ConfigMap as namespace/name or name (e.g. kube-system/hami-scheduler-device): "+strings.Join(why, "; "))}
	}
	return nil
}
