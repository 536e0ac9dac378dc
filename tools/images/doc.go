// Command images builds gpuadmit's container images without a container
// daemon, and pushes them (`make images`, `make push`).
//
//	images build --chart charts/gpuadmit --out bin/images [--arch amd64,arm64]
//	             [--version v0.1.0] [--revision SHA] [--source-date-epoch N]
//	images push  --layout bin/images --registry host/prefix
//
// build compiles cmd/webhook (CGO_ENABLED=0, static) and cmd/nvml-agent
// (cgo: go-nvml dlopens libnvidia-ml, so the agent is linked against glibc)
// for each architecture, assembles their layers itself (no base image: a
// deterministic tar of the binary, /etc/passwd and /etc/group naming the
// nonroot user 65532, and for the agent the glibc files it and libnvidia-ml
// need, taken from the build machine's Debian packages: libc6 for amd64,
// libc6-arm64-cross for arm64), and writes one OCI image layout whose
// index.json holds one multi-architecture image index per image, named
// (org.opencontainers.image.ref.name) as the chart's values.yaml names it.
// Builds are reproducible: -trimpath, every time in the images is
// --source-date-epoch, tar entries are sorted with fixed owners and modes,
// so two builds of one commit give the same digests.
//
// push writes each image index of the layout to REGISTRY/<name>:<tag>
// (<name> the last element of the chart's repository), with the
// credentials of the docker configuration ($DOCKER_CONFIG or
// ~/.docker/config.json, and its credential helpers).
package main
