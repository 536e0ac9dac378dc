package main

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// The release, its commit and build time, set when building (make build
// and make release set them):
//
//	go build -ldflags "-X main.version=v0.3.0 -X main.commit=$(git rev-parse --short HEAD) \
//	  -X main.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)" ./cmd/gpuadmit
//
// Without them, commit and buildDate are the build's VCS stamp (the
// commit and its time) when Go recorded one, else "unknown".
var (
	version   = "dev"
	commit    = ""
	buildDate = ""
)

// unknown is a commit or build date nothing recorded.
const unknown = "unknown"

// versionInfo is `gpuadmit version -o json`.
type versionInfo struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	BuildDate string `json:"buildDate"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// buildVersion is the version of this binary: the -ldflags values, else
// the build's VCS stamp, else "unknown".
func buildVersion() versionInfo {
	v := versionInfo{Version: version, Commit: commit, BuildDate: buildDate,
		GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		v = withVCS(v, bi.Settings)
	}
	v.Commit, v.BuildDate = cmp.Or(v.Commit, unknown), cmp.Or(v.BuildDate, unknown)
	return v
}

// withVCS fills the commit and build date v lacks from the build's VCS
// settings (go build stamps them unless -buildvcs=false): the revision,
// shortened as git does and "-dirty" when modified, and its time.
func withVCS(v versionInfo, settings []debug.BuildSetting) versionInfo {
	vcs := map[string]string{}
	for _, s := range settings {
		vcs[s.Key] = s.Value
	}
	if rev := vcs["vcs.revision"]; v.Commit == "" && rev != "" {
		v.Commit = rev[:min(len(rev), 7)]
		if vcs["vcs.modified"] == "true" {
			v.Commit += "-dirty"
		}
	}
	if v.BuildDate == "" {
		v.BuildDate = vcs["vcs.time"]
	}
	return v
}

// versionLine is what `gpuadmit version` and --version print after
// "gpuadmit version ".
func versionLine() string {
	v := buildVersion()
	return fmt.Sprintf("%s (commit %s, built %s, %s %s)", v.Version, v.Commit, v.BuildDate, v.GoVersion, v.Platform)
}

func (c *cli) versionCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version [-o json|yaml]",
		Short: "Print the version",
		Long: `Print the version, the commit and build date, the Go version and the
platform: one line, or {"version","commit","buildDate","goVersion","platform"}
with -o json.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format == "" {
				_, err := fmt.Fprintf(c.stdout, "%s version %s\n", cmd.Root().DisplayName(), versionLine())
				return err
			}
			o, err := parseOutput(format, dataFormats)
			if err != nil {
				return err
			}
			return o.write(c.stdout, buildVersion(), nil)
		},
	}
	outputFlag(cmd, &format, "", dataFormats)
	return cmd
}
