package main

import (
	"fmt"
	"maps"
	"slices"

	"github.com/spf13/cobra"

	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// stateFlags are the flags of the commands that report on the cluster's
// state (usage, top, audit): --state, -A and what they count with.
type stateFlags struct {
	state string
	all   bool
	setup setupFlags
}

// stateFlagsOn adds f's flags to cmd; allHelp is the help of -A.
func stateFlagsOn(cmd *cobra.Command, f *stateFlags, allHelp string) {
	cmd.Flags().StringVar(&f.state, "state", "", stateUsage)
	cmd.Flags().BoolVarP(&f.all, "all-namespaces", "A", false, allHelp)
	setupFlagsOn(cmd, &f.setup, false)
}

// reading runs a command that reads the state f names: --gpuadmit-namespace
// is refused with --state, and an error of a cluster that does not answer
// is said in one line.
func (c *cli) reading(cmd *cobra.Command, f stateFlags, run func() error) error {
	if err := checkSetupFlags(cmd, f.state); err != nil {
		return err
	}
	err := run()
	if f.state == "" {
		err = c.unreachable(err)
	}
	return err
}

// view is the state usage, top and audit report on: the ledger, the
// reservations counted (reading the cluster, when asked), the charging
// and the namespace shown ("" for every one).
type view struct {
	ledger   *ledger.Ledger
	reserved map[string][]reservation.Reservation
	ch       charging
	ns       string
	warn     func(string)
}

// readView reads the configuration (saying on stderr which, as usage
// does) and the state f names. Its namespace is -n's, "" with -A; without
// either, every one when every is set (audit) or the state is a dump,
// else the kubeconfig context's, as kubectl get. reserve reads the
// GPUUsage reservations of the namespaces shown (none in a dump).
func (c *cli) readView(cmd *cobra.Command, f stateFlags, every, reserve bool) (view, error) {
	v := view{warn: func(w string) { fmt.Fprintf(c.stderr, "%s: warning: %s\n", cmd.CommandPath(), w) }}
	src := c.source(f.state, v.warn)
	kube, err := src.gpuadmit()
	if err != nil {
		return v, err
	}
	if v.ns, err = c.shownNamespace(src, f, every); err != nil {
		return v, err
	}
	st, err := newSetup(cmd.Context(), f.setup, kube, false, c.stderr)
	if err != nil {
		return v, err
	}
	st.say(cmd, f.setup, kube != nil, false, c.stderr)
	if v.ch, err = chargingOf(st.cfg); err != nil {
		return v, err
	}
	var scope []string
	if v.ns != "" {
		scope = []string{v.ns}
	}
	v.ledger, v.reserved, err = src.ledger(cmd.Context(), v.ch, scope, reserve)
	return v, err
}

// shownNamespace is the namespace a report shows ("" for every one).
func (c *cli) shownNamespace(src source, f stateFlags, every bool) (string, error) {
	switch {
	case f.all:
		return "", nil
	case *c.kube.Namespace != "":
		return *c.kube.Namespace, nil
	case every || f.state != "":
		return "", nil
	}
	return src.namespace()
}

// snapshot is the ledger's snapshot, reservations counted, of the
// namespace shown (scoped).
func (v view) snapshot() ledger.Snapshot { return scoped(v.ledger.Snapshot(v.reserved), v.ns) }

// primary is the family at the first level of every report.
func (v view) primary() string { return v.ch.families[0].Name }

// warnProblems says each problem of s on stderr.
func (v view) warnProblems(s ledger.Snapshot) {
	for _, p := range s.Problems {
		v.warn(p.String())
	}
}

// scoped is s as a report on namespace only shows it: that namespace
// alone (with no usage and no limits if s lacks it), its problems and
// those of nodes; s itself when only is "".
func scoped(s ledger.Snapshot, only string) ledger.Snapshot {
	if only == "" {
		return s
	}
	s.Namespaces = map[string]ledger.NamespaceSnapshot{only: s.Namespaces[only]}
	s.Problems = slices.DeleteFunc(s.Problems, func(p ledger.Problem) bool { return p.Namespace != "" && p.Namespace != only })
	return s
}

// sortedNamespaces are the names of the namespaces of s, sorted.
func sortedNamespaces(s ledger.Snapshot) []string { return slices.Sorted(maps.Keys(s.Namespaces)) }
