package version

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/output"
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
func buildVersion(b cmdline.Build) versionInfo {
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

// Line is what `gpuadmit version` and --version print after
// "gpuadmit version ".
func Line(b cmdline.Build) string {
	v := buildVersion(b)
	return fmt.Sprintf("%s (commit %s, built %s, %s %s)", v.Version, v.Commit, v.BuildDate, v.GoVersion, v.Platform)
}

// NewCmd is the `gpuadmit version` command, run with c's streams and flags.
func NewCmd(c *cmdline.CLI) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "version [-o json|yaml]",
		Short: "Print the version",
		Long: `Print the version, the commit and build date, the Go version and the
platform: one line, or {"version","commit","buildDate","goVersion","platform"}
with -o json.`,
		Args: cmdline.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format == "" {
				_, err := fmt.Fprintf(c.Stdout, "%s version %s\n", cmd.Root().DisplayName(), Line(c.Build))
				return err
			}
			o, err := output.Parse(format, output.DataFormats)
			if err != nil {
				return err
			}
			return o.Write(c.Stdout, buildVersion(c.Build), nil)
		},
	}
	output.Flag(cmd, &format, "", output.DataFormats)
	return cmd
}
