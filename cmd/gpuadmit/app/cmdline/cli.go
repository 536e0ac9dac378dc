package cmdline

import (
	"io"
	"os"
	"time"

	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/utils/clock"
)

// CLI is one run of the command line: its streams, kubectl's connection
// flags (which the commands that read a cluster use without --state), how
// a slow read tells its progress, and the build it runs in.
type CLI struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Kube           *genericclioptions.ConfigFlags
	// TTY reports whether a stream is a terminal: a slow live read tells
	// its progress on stderr then (after progressAfter, then every
	// progressEvery).
	TTY                          func(io.Writer) bool
	ProgressAfter, ProgressEvery time.Duration
	// Clock times the progress lines.
	Clock clock.Clock
	// Build is what `gpuadmit version` prints.
	Build Build
}

// New is a run on the given streams, with kubectl's connection flags and
// a terminal's progress lines, built as version "dev".
func New(stdin io.Reader, stdout, stderr io.Writer) *CLI {
	return &CLI{Stdin: stdin, Stdout: stdout, Stderr: stderr, Kube: genericclioptions.NewConfigFlags(true),
		TTY: isTerminal, ProgressAfter: progressAfter, ProgressEvery: progressEvery, Clock: clock.RealClock{}, Build: Build{Version: "dev"}}
}

// UserAgent is the user agent of gpuadmit's requests: gpuadmit/VERSION.
func (c *CLI) UserAgent() string { return "gpuadmit/" + c.Build.Version }

// Build is the release, its commit and build time, as the build set them
// (package main's variables, which make build and make release set with
// -ldflags -X). An empty Commit or BuildDate is the build's VCS stamp (the
// commit and its time) when Go recorded one, else "unknown".
type Build struct {
	Version, Commit, BuildDate string
}

// When a live read is slow: the first progress line after progressAfter,
// then one every progressEvery.
const (
	progressAfter = 2 * time.Second
	progressEvery = time.Second
)

// isTerminal reports whether w is a terminal (a character device: a
// redirection to /dev/null counts too, where the lines do no harm).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
