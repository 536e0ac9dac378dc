package main

// The release and commit of this binary, which gpuadmit_build_info and
// --version report, set when building (make build and make images set them):
//
//	go build -ldflags "-X main.version=v0.3.0 -X main.commit=$(git rev-parse --short HEAD)" ./cmd/webhook
//
// Without them the metric reads the build's module version and VCS stamp,
// else "unknown"; --version prints "unknown".
var (
	version = ""
	commit  = ""
)

// versionLine is what --version prints: the program, its version and commit.
func versionLine() string {
	return "webhook " + orUnknown(version) + " commit " + orUnknown(commit)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
