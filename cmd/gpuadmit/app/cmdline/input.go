package cmdline

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// ManifestFlags are -f, repeated, and -R: the manifests a command reads,
// as kubectl reads them (pkg/manifest.ReadFiles).
type ManifestFlags struct {
	Files     []string
	recursive bool
}

// Required checks that -f was given.
func (m ManifestFlags) Required(cmd *cobra.Command) error {
	if len(m.Files) == 0 {
		return UsageErrorf("-f is required; usage: %s", cmd.UseLine())
	}
	return nil
}

// Stdin reports whether one of the -f reads standard input.
func (m ManifestFlags) Stdin() bool { return slices.Contains(m.Files, "-") }

// Read reads every manifest, in order, into one set of objects; none of
// them holding a Pod, a workload or a ResourceClaim is an error.
func (m ManifestFlags) Read(stdin io.Reader) (*manifest.Objects, error) {
	stdin, seen := TeeStdin(m.Files, stdin)
	objs, err := manifest.ReadFiles(m.Files, m.recursive, stdin)
	if err != nil {
		return nil, err
	}
	if len(objs.Workloads) == 0 {
		files, err := manifest.Files(m.Files, m.recursive)
		if err != nil {
			files = m.Files
		}
		return nil, fmt.Errorf("%s: no Pod, workload (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob) or ResourceClaim found%s",
			strings.Join(m.Files, ", "), KindsHint(files, seen.Bytes()))
	}
	return objs, nil
}
