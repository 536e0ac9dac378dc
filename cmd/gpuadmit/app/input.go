package app

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/pkg/manifest"
)

// manifestFlags are -f, repeated, and -R: the manifests a command reads,
// as kubectl reads them (pkg/manifest.ReadFiles).
type manifestFlags struct {
	files     []string
	recursive bool
}

// required checks that -f was given.
func (m manifestFlags) required(cmd *cobra.Command) error {
	if len(m.files) == 0 {
		return usageErrorf("-f is required; usage: %s", cmd.UseLine())
	}
	return nil
}

// stdin reports whether one of the -f reads standard input.
func (m manifestFlags) stdin() bool { return slices.Contains(m.files, "-") }

// read reads every manifest, in order, into one set of objects; none of
// them holding a Pod, a workload or a ResourceClaim is an error.
func (m manifestFlags) read(stdin io.Reader) (*manifest.Objects, error) {
	stdin, seen := teeStdin(m.files, stdin)
	objs, err := manifest.ReadFiles(m.files, m.recursive, stdin)
	if err != nil {
		return nil, err
	}
	if len(objs.Workloads) == 0 {
		files, err := manifest.Files(m.files, m.recursive)
		if err != nil {
			files = m.files
		}
		return nil, fmt.Errorf("%s: no Pod, workload (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob) or ResourceClaim found%s",
			strings.Join(m.files, ", "), kindsHint(files, seen.Bytes()))
	}
	return objs, nil
}
