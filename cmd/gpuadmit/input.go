package main

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
	objs, err := manifest.ReadFiles(m.files, m.recursive, stdin)
	if err != nil {
		return nil, err
	}
	if len(objs.Workloads) == 0 {
		return nil, fmt.Errorf("%s: no Pod, workload (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob) or ResourceClaim found", strings.Join(m.files, ", "))
	}
	return objs, nil
}
