package main

// The release and commit of this binary, which --version prints, set when
// building (make images sets them):
//
//	go build -ldflags "-X main.version=v0.3.0 -X main.commit=$(git rev-parse HEAD)" ./cmd/nvml-agent
var (
	version = ""
	commit  = ""
)

// versionLine is what --version prints: the program, its version and commit
// ("unknown" for what the build did not set).
func versionLine() string {
	return "nvml-agent " + orUnknown(version) + " commit " + orUnknown(commit)
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
