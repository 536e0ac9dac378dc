// Package manifestgen renders the Helm chart (charts/gpuadmit) into the
// kustomize base under manifests/, so that the chart is the one place the
// objects are written: `make manifests` writes the files, and a test in
// tests/chart fails when they are out of date. It runs the helm binary the
// project builds from source.
package manifestgen
