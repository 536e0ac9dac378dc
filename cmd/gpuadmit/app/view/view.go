package view

import (
	"fmt"
	"slices"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/setup"
	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/source"
	configv1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/budget"
	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/pkg/summary"
)

// StateFlags are the flags of the commands that report on the cluster's
// state (usage, top, audit): --state, -A and what they count with.
type StateFlags struct {
	state string
	all   bool
	setup setup.Flags
}

// StateFlagsOn adds f's flags to cmd; allHelp is the help of -A.
func StateFlagsOn(cmd *cobra.Command, f *StateFlags, allHelp string) {
	cmd.Flags().StringVar(&f.state, "state", "", source.StateUsage)
	cmd.Flags().BoolVarP(&f.all, "all-namespaces", "A", false, allHelp)
	setup.FlagsOn(cmd, &f.setup, false)
}

// Reading runs a command that reads the state f names: --gpuadmit-namespace
// is refused with --state, and an error of a cluster that does not answer
// is said in one line.
func Reading(c *cmdline.CLI, cmd *cobra.Command, f StateFlags, run func() error) error {
	if err := setup.CheckFlags(cmd, f.state); err != nil {
		return err
	}
	err := run()
	if f.state == "" {
		err = source.Unreachable(c, err)
	}
	return err
}

// View is the state usage, top and audit report on: the ledger, the
// reservations counted (reading the cluster, when asked), the charging
// and the namespace shown ("" for every one).
type View struct {
	Ledger   *ledger.Ledger
	reserved map[string][]reservation.Reservation
	Ch       source.Charging
	Ns       string
	Warn     func(string)
	// teams are the team quotas and the teams' objects read with the
	// ledger (nil: none).
	teams *clusterstate.Teams
	// budgets are the GPU-hour budgets read with the ledger (nil: none),
	// tracker tracks them over the state's pods (nil: no budget); scoped:
	// only the pods of Ns were read (a GPUClusterBudget's other
	// namespaces' were not).
	budgets *clusterstate.Budgets
	tracker *budget.Tracker
	scoped  bool
	// src and clock are what the tracker was built from (WhatIfBudgets
	// rebuilds it).
	src       source.Source
	clock     clock.PassiveClock
	budgetCfg *configv1.Budgets
	// NearPercent is the lowest warning threshold of the budgets.
	NearPercent int64
}

// ReadView reads the configuration (saying on stderr which, as usage
// does) and the state f names. Its namespace is -n's, "" with -A; without
// either, every one when every is set (audit) or the state is a dump,
// else the kubeconfig context's, as kubectl get. reserve reads the
// GPUReservationSet reservations of the namespaces shown (none in a dump).
func ReadView(c *cmdline.CLI, cmd *cobra.Command, f StateFlags, every, reserve bool) (View, error) {
	v := View{NearPercent: DefaultNearPercent, Warn: func(w string) { fmt.Fprintf(c.Stderr, "%s: warning: %s\n", cmd.CommandPath(), w) }}
	src := source.Of(c, f.state, v.Warn)
	source.SetGpuadmitNamespace(src, f.setup.Namespace())
	kube, err := src.Gpuadmit()
	if err != nil {
		return v, err
	}
	if v.Ns, err = shownNamespace(c, src, f, every); err != nil {
		return v, err
	}
	st, err := setup.New(cmd.Context(), f.setup, kube, false, c.Stderr)
	if err != nil {
		return v, err
	}
	st.Say(cmd, f.setup, kube != nil, false, c.Stderr)
	if v.Ch, err = source.ChargingOf(st.Cfg); err != nil {
		return v, err
	}
	var scope []string
	if v.Ns != "" {
		scope = []string{v.Ns}
	}
	if v.Ledger, v.reserved, err = src.Ledger(cmd.Context(), v.Ch, scope, reserve); err != nil {
		return v, err
	}
	v.teams = src.Teams()
	if v.teams != nil {
		for _, w := range v.teams.Warnings { // a dump's (the cluster's are said as read)
			v.Warn(w)
		}
	}
	v.budgets = src.Budgets()
	v.src, v.clock = src, c.Clock
	v.budgetCfg = st.Cfg.Budgets
	v.NearPercent = NearPercentOf(v.budgetCfg)
	v.tracker = source.BudgetTracker(src, v.budgets, v.Ch, v.budgetCfg, c.Clock)
	v.scoped = f.state == "" && v.Ns != ""
	if v.Ns == "" {
		return v, nil
	}
	return v, source.NamespaceExists(cmd.Context(), src, v.Ledger, v.Ns)
}

// shownNamespace is the namespace a report shows ("" for every one).
func shownNamespace(c *cmdline.CLI, src source.Source, f StateFlags, every bool) (string, error) {
	switch {
	case f.all:
		return "", nil
	case *c.Kube.Namespace != "":
		return *c.Kube.Namespace, nil
	case every || f.state != "":
		return "", nil
	}
	return src.Namespace()
}

// Snapshot is the ledger's snapshot, reservations counted, of the
// namespace shown (scoped).
func (v View) Snapshot() ledger.Snapshot { return Scoped(v.Ledger.Snapshot(v.reserved), v.Ns) }

// Teams are the team quotas of the state as their status says them
// (summary.TeamOf), by name: with a namespace shown, those that count it.
func (v View) Teams() []summary.Team {
	if v.teams == nil {
		return nil
	}
	var out []summary.Team
	for _, q := range v.Ledger.ClusterQuotas() {
		t := summary.TeamOf(v.Ledger, q, v.teams.Objects[q.Name], v.teams.PodsResourceVersion)
		if v.Ns == "" || slices.ContainsFunc(t.Namespaces, func(p summary.Part) bool { return p.Name == v.Ns }) {
			out = append(out, t)
		}
	}
	return out
}

// Primary is the family at the first level of every report.
func (v View) Primary() string { return v.Ch.Families[0].Name }

// WarnProblems says each problem of s on stderr.
func (v View) WarnProblems(s ledger.Snapshot) {
	for _, p := range s.Problems {
		v.Warn(p.String())
	}
}

// Scoped is s as a report on namespace only shows it: that namespace
// alone (with no usage and no limits if s lacks it), its problems and
// those of nodes; s itself when only is "".
func Scoped(s ledger.Snapshot, only string) ledger.Snapshot {
	if only == "" {
		return s
	}
	s.Namespaces = map[string]ledger.NamespaceSnapshot{only: s.Namespaces[only]}
	s.Problems = slices.DeleteFunc(s.Problems, func(p ledger.Problem) bool { return p.Namespace != "" && p.Namespace != only })
	return s
}
