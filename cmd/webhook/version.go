package main

// The release and commit of this binary, which gpuadmit_build_info reports,
// set when building (make build and the Dockerfile set them):
//
//	go build -ldflags "-X main.version=v0.3.0 -X main.commit=$(git rev-parse --short HEAD)" ./cmd/webhook
//
// Without them the metric reads the build's module version and VCS stamp,
// else "unknown".
var (
	version = ""
	commit  = ""
)
