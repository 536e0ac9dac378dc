// Package v1alpha1 is gpuadmit's configuration API, config.gpuadmit.io
// v1alpha1, kind Configuration: the one file the webhook server and the
// command line (--config) read, so that both decide with the same
// settings. Every field is optional (a pointer: unset is distinguishable
// from an explicit zero); pkg/config sets the defaults, in one place
// (config.SetDefaults), decodes a file strictly and validates it. Like every
// package of pkg/apis, this one imports nothing of the project.
//
// The devices section is HAMi's device config and is read leniently: the
// keys gpuadmit reads are typed, every other key is reported as ignored.
//
// +kubebuilder:object:generate=true
package v1alpha1
