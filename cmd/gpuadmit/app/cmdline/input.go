package cmdline

import (
	"errors"
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

// Read reads every manifest, in order, into one set of objects. A file
// that cannot be read is one error of the errors returned beside the
// objects of the others (errors.Join's, one line a file, each naming its
// file): the command decides the others and fails at the end
// (Failed). When no manifest holds a Pod, a workload or a ResourceClaim,
// the objects are nil.
func (m ManifestFlags) Read(stdin io.Reader) (*manifest.Objects, error) {
	return m.ReadExpanded(stdin, nil)
}

// ReadExpanded is Read with expand (when set) run on the objects read
// before they are counted: it may turn objects of other kinds into
// workloads (eval's custom workload kinds).
func (m ManifestFlags) ReadExpanded(stdin io.Reader, expand func(*manifest.Objects)) (*manifest.Objects, error) {
	stdin, seen := TeeStdin(m.Files, stdin)
	files, err := manifest.Files(m.Files, m.recursive)
	if err != nil {
		return nil, err
	}
	objs := &manifest.Objects{}
	var errs []error
	for _, f := range files {
		more, err := manifest.ReadFile(f, stdin)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		objs.Append(more)
	}
	if expand != nil {
		expand(objs)
	}
	if len(objs.Workloads) == 0 {
		if len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
		return nil, fmt.Errorf("%s: no Pod, workload (Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob) or ResourceClaim found%s",
			strings.Join(m.Files, ", "), KindsHint(files, seen.Bytes()))
	}
	return objs, errors.Join(errs...)
}

// Failed ends a command some of whose objects (or files) failed, after it
// printed the others: each error on stderr, a line each, named by the
// command as any error is, and exit code 2.
func Failed(cmd *cobra.Command, stderr io.Writer, errs []error) error {
	for _, err := range errs {
		fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), err)
	}
	return ExitCode(2)
}

// Unwrapped are the errors err joins (errors.Join's), err itself when it
// joins none, nil for nil.
func Unwrapped(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
