package app

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Build is the release, its commit and build time, as the build set them
// (package main's variables, which make build and make release set with
// -ldflags -X). An empty Commit or BuildDate is the build's VCS stamp (the
// commit and its time) when Go recorded one, else "unknown".
type Build struct {
	Version, Commit, BuildDate string
}

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
func buildVersion(b Build) versionInfo {
	v := versionInfo{Version: b.Version, Commit: b.Commit, BuildDate: b.BuildDate,
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
func versionLine(b Build) string {
	v := buildVersion(b)
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
				_, err := fmt.Fprintf(c.stdout, "%s version %s\n", cmd.Root().DisplayName(), versionLine(c.build))
				return err
			}
			o, err := parseOutput(format, dataFormats)
			if err != nil {
				return err
			}
			return o.write(c.stdout, buildVersion(c.build), nil)
		},
	}
	outputFlag(cmd, &format, "", dataFormats)
	return cmd
}
