// Package config is gpuadmit's one configuration: a versioned file
// (apiVersion config.gpuadmit.io/v1alpha1, kind Configuration) read by the
// webhook server and by the command line (--config), so that both decide
// with the same settings. Defaults are set in one place (SetDefaults) and
// every value is validated with an error naming its key.
//
// The devices section is HAMi's device config: its nvidia keys (resource
// names, defaults, memory factor) inline, or the path of an existing HAMi
// device-config.yaml. The keys gpuadmit reads are validated strictly; every
// other key of that section (HAMi's scheduler and device-plugin keys, other
// vendors' sections, keys a later HAMi release adds) is reported once as
// ignored, never an error. A file that is a bare HAMi device config (no
// apiVersion) is read as the devices section with every other value at its
// default. gpuadmit's own sections (admission, policy) are strict: an
// unknown key there is an error.
package config
