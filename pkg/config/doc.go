// Package config reads gpuadmit's one configuration, the versioned type of
// pkg/apis/config/v1alpha1 (apiVersion config.gpuadmit.io/v1alpha1, kind
// Configuration), for the webhook server and the command line (--config),
// so that both decide with the same settings: Load and Parse decode a file
// strictly through a codec (an unknown key of gpuadmit's own sections is an
// error naming it), read the HAMi file the devices section names, set the
// defaults (SetDefaults, the one place) and
// validate every value (Validate: field paths in the errors).
//
// The devices section is HAMi's device config, inline, the path of an
// existing HAMi device-config.yaml, or a ConfigMap holding it
// (devices.hamiConfigMap: ReadHAMiConfigMap reads it through the caller's
// API client, the webhook's at start, the command line's): every backend section HAMi's chart
// renders is read, and a section present governs its device families
// (Families: nvidia always, then each present section's, then gpuadmit's
// own gpushare section). The keys a family's booking rule reads are
// validated strictly; every other key (HAMi's scheduler and device-plugin
// keys, keys and sections a later HAMi release adds) is reported once as
// ignored, never an error. A chip of HAMi's lists (iluvatars,
// vnpus.configs) that effective.HAMiFamilies does not know is governed from
// its own keys, and is an error when it lacks one its rule needs. A file
// that is a bare HAMi device config (no apiVersion) is read as the devices
// section with every other value at its default.
package config
