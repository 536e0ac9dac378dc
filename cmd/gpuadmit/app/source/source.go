package source

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// StateUsage is the help of --state.
const StateUsage = "dump of the cluster's Pods, Nodes, ResourceQuotas, ResourceClaims, ResourceClaimTemplates and ResourceSlices, " +
	"as 'kubectl get -o yaml' prints them: a file, a directory of .json, .yaml and .yml files, or - for standard input; default: read the cluster"

// Source is where usage and eval read the cluster's state: a dump
// (--state) or the cluster of the kubeconfig.
type Source interface {
	// namespace is the namespace of a pod that names none.
	Namespace() (string, error)
	// ledger builds the usage ledger from the cluster's Pods, Nodes,
	// ResourceQuotas, ResourceClaims, ResourceClaimTemplates and
	// ResourceSlices, charged as ch says. namespaces are those the command
	// reports on (nil: every one); reserve also reads their GPUReservationSet
	// reservations, by namespace (a dump has none; for every namespace,
	// those of the namespaces the state has GPU pods, claims or quotas in).
	Ledger(ctx context.Context, ch Charging, namespaces []string, reserve bool) (*ledger.Ledger, map[string][]reservation.Reservation, error)
	// user is who the requests come from (input.userInfo).
	User(ctx context.Context) (decision.UserInfo, error)
	// gpuadmit is the client that reads gpuadmit's own configuration and
	// policies in the cluster; nil for a dump.
	Gpuadmit() (kubernetes.Interface, error)
	// Teams are the team quotas (GPUClusterQuotas) and the teams'
	// GPUReservationSets read with the last ledger (its team quotas fed);
	// nil: none were read.
	Teams() *clusterstate.Teams
	// Budgets are the GPU-hour budgets (GPUBudgets, GPUClusterBudgets)
	// read with the last ledger; nil: none were read.
	Budgets() *clusterstate.Budgets
}

// read is what a source read besides its ledger: the teams, and where
// gpuadmit's own objects are (its namespace).
type read struct {
	teams   *clusterstate.Teams
	budgets *clusterstate.Budgets
	// objects are the state's objects the budgets are tracked over (its
	// namespaces and pods).
	objects *manifest.Objects
	// ledger is the ledger built from objects: the device sizes a pod's
	// memory resolves against, as the webhook's tracker gets them.
	ledger *ledger.Ledger
	// namespace is gpuadmit's (--gpuadmit-namespace), where the teams'
	// GPUReservationSets are.
	namespace string
}

// defaultGpuadmitNamespace is where the chart installs gpuadmit.
const defaultGpuadmitNamespace = "gpuadmit-system"

// SetGpuadmitNamespace tells src where gpuadmit's own objects are (the
// teams' GPUReservationSets): --gpuadmit-namespace.
func SetGpuadmitNamespace(src Source, ns string) {
	switch s := src.(type) {
	case live:
		s.read.namespace = ns
	case Dump:
		if s.read != nil {
			s.read.namespace = ns
		}
	}
}

// Of returns the dump at path or, when path is empty, the cluster;
// warn reports what the cluster would not let it read.
func Of(c *cmdline.CLI, path string, warn func(string)) Source {
	if path != "" {
		return Dump{Path: path, stdin: c.Stdin, kube: c.Kube, read: &read{}}
	}
	return live{kube: c.Kube, userAgent: c.UserAgent(), warn: warn, progress: func() *progress { return startProgress(c) }, gaps: &gaps{},
		read: &read{namespace: defaultGpuadmitNamespace}}
}

// Dump is a 'kubectl get -o yaml' dump of Pods, Nodes, ResourceQuotas (and
// Namespaces, ResourceClaims, ResourceClaimTemplates, ResourceSlices).
type Dump struct {
	Path  string
	stdin io.Reader
	kube  *genericclioptions.ConfigFlags // --as and --as-group only
	read  *read
}

// NewDump is the dump at path (a file or a directory), its teams read
// with its ledger (Teams).
func NewDump(path string) Dump { return Dump{Path: path, read: &read{}} }

// Namespace is the namespace a dump is read in without -n: "default".
func (Dump) Namespace() (string, error) { return "default", nil }

// Gpuadmit is no client: a dump has no cluster to read the setup from.
func (Dump) Gpuadmit() (kubernetes.Interface, error) { return nil, nil }

// Ledger reads the dump into a ledger charging as ch says; a dump holds no
// namespace's reservations, but a team's GPUReservationSets and its
// GPUClusterQuotas (Teams).
func (d Dump) Ledger(_ context.Context, ch Charging, _ []string, _ bool) (*ledger.Ledger, map[string][]reservation.Reservation, error) {
	l, got, err := loadState(d.Path, d.stdin, ch, logr.Discard())
	if d.read != nil {
		d.read.teams, d.read.budgets, d.read.objects, d.read.ledger = got.teams, got.budgets, got.objects, l
	}
	return l, nil, err
}

// Budgets are the dump's GPU-hour budgets (nil: not read).
func (d Dump) Budgets() *clusterstate.Budgets {
	if d.read == nil {
		return nil
	}
	return d.read.budgets
}

// Teams are the dump's team quotas and teams' objects (nil: not read).
func (d Dump) Teams() *clusterstate.Teams {
	if d.read == nil {
		return nil
	}
	return d.read.teams
}

// Charging is how the ledger charges requests: the device families (the
// first at the first level of the output) and the charger of the
// ResourceClaims of governed DeviceClasses (nil: no claim is charged).
type Charging struct {
	Families []effective.Family
	Claims   *dra.Charger
	// bound is the plausibility bound of each family's devices.
	bound func(family string) int64
}

// ChargingOf is the configuration's charging, the webhook's.
func ChargingOf(cfg *config.Configuration) (Charging, error) {
	fams := config.Families(cfg)
	claims, err := dra.NewCharger(config.DeviceClasses(cfg), fams, config.ChargerOptions(cfg)...)
	if err != nil {
		return Charging{}, fmt.Errorf("configuration: dra.deviceClasses: %w", err)
	}
	return Charging{Families: fams, Claims: claims, bound: config.MaxDeviceMemoryMiB(cfg)}, nil
}

// governs reports whether any DeviceClass is governed (claims are read).
func (ch Charging) governs() bool { return len(ch.Claims.Classes()) > 0 }

// LedgerOf builds the usage ledger from a dump's or the cluster's objects:
// namespaces (their labels), then nodes (their devices resolve memory
// percentages), quotas, ResourceSlices (their devices size claims),
// ResourceClaimTemplates (a pod charges its templates' claims until they
// are recorded), claims, then pods. The DeviceClasses are not read: which
// classes are governed, and how, is the configuration's.
func LedgerOf(objs *manifest.Objects, ch Charging, log logr.Logger) *ledger.Ledger {
	opts := ledger.Options{Families: ch.Families, Claims: ch.Claims, MaxDeviceMemoryMiB: ch.bound, Log: log}
	if u := stateUsers(); u != nil {
		opts.Users = u
	}
	l := ledger.New(opts)
	for _, ns := range objs.Namespaces {
		l.UpsertNamespace(ns)
	}
	for _, n := range objs.Nodes {
		l.UpsertNode(n)
	}
	for _, q := range objs.Quotas {
		l.UpsertQuota(q)
	}
	for _, s := range objs.Slices {
		l.UpsertSlice(s)
	}
	for _, t := range objs.ClaimTemplates {
		l.UpsertTemplate(t)
	}
	for _, c := range objs.Claims {
		l.UpsertClaim(c)
	}
	for _, p := range objs.Pods {
		l.UpsertPod(p)
	}
	return l
}

// live is the cluster of the kubeconfig, as kubectl's flags select it.
type live struct {
	kube *genericclioptions.ConfigFlags
	// userAgent is gpuadmit's, with its version.
	userAgent string
	warn      func(string)
	// progress, when set, starts the lines that tell a slow read's
	// progress.
	progress func() *progress
	// gaps are the reads the user was refused (nil: not kept).
	gaps *gaps
	read *read
}

// Namespace is kubectl's: -n, else the context's, else "default".
func (l live) Namespace() (string, error) {
	ns, _, err := l.kube.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", kubeconfigError(err)
	}
	return ns, nil
}

// config is the kubeconfig's REST configuration, with gpuadmit's user agent.
func (l live) config() (*rest.Config, error) {
	cfg, err := l.kube.ToRESTConfig()
	if err != nil {
		return nil, kubeconfigError(err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = l.userAgent
	return cfg, nil
}

func (l live) client() (kubernetes.Interface, error) {
	cfg, err := l.config()
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	return kc, nil
}

func (l live) Gpuadmit() (kubernetes.Interface, error) { return l.client() }

// Teams are the cluster's team quotas and teams' objects read with the
// last ledger (nil: not read).
func (l live) Teams() *clusterstate.Teams {
	if l.read == nil {
		return nil
	}
	return l.read.teams
}

// Budgets are the cluster's GPU-hour budgets read with the last ledger
// (nil: not read).
func (l live) Budgets() *clusterstate.Budgets {
	if l.read == nil {
		return nil
	}
	return l.read.budgets
}

func (l live) Ledger(ctx context.Context, ch Charging, namespaces []string, reserve bool) (*ledger.Ledger, map[string][]reservation.Reservation, error) {
	cfg, err := l.config()
	if err != nil {
		return nil, nil, err
	}
	kc, err := l.client()
	if err != nil {
		return nil, nil, err
	}
	st, err := l.Read(ctx, kc, ch, namespaces)
	if err != nil {
		return nil, nil, err
	}
	led := LedgerOf(st.Objects, ch, logr.Discard())
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamic client: %w", err)
	}
	l.readTeams(ctx, dc, led, st.PodsResourceVersion)
	l.readBudgets(ctx, dc, namespaces)
	if l.read != nil {
		l.read.objects, l.read.ledger = st.Objects, led
	}
	if !reserve {
		return led, nil, nil
	}
	if namespaces == nil { // every namespace: those the state has
		namespaces = SortedNamespaces(led.Snapshot(nil))
	}
	reserved := map[string][]reservation.Reservation{}
	for _, ns := range namespaces {
		rs, err := clusterstate.Reservations(ctx, dc, ns, st.PodsResourceVersion)
		if err != nil {
			if apierrors.IsForbidden(err) {
				l.gaps.add("get gpureservationsets in namespace " + ns)
			}
			l.warn(fmt.Sprintf("%v: its reservations are not counted", err))
			continue
		}
		reserved[ns] = rs
	}
	return led, reserved, nil
}

// readTeams reads the cluster's team quotas and the teams' objects into
// led; what it cannot read is a warning (the teams are then not counted).
func (l live) readTeams(ctx context.Context, dc dynamic.Interface, led *ledger.Ledger, podsRV string) {
	if l.read == nil {
		return
	}
	teams, err := clusterstate.ReadTeams(ctx, dc, l.read.namespace, podsRV)
	if err != nil {
		if apierrors.IsForbidden(err) {
			l.gaps.add("list gpuclusterquotas, get gpureservationsets in namespace " + l.read.namespace)
		}
		l.warn(fmt.Sprintf("%v: the team quotas are not counted", err))
		return
	}
	for _, w := range teams.Warnings {
		l.warn(w)
	}
	teams.Warnings = nil // said
	teams.Feed(led)
	l.read.teams = teams
}

// readBudgets reads the cluster's GPU-hour budgets (of namespaces, every
// one when nil); what it cannot read is a warning (none are shown then).
func (l live) readBudgets(ctx context.Context, dc dynamic.Interface, namespaces []string) {
	if l.read == nil {
		return
	}
	b, err := clusterstate.ReadBudgets(ctx, dc, namespaces)
	if err != nil {
		if apierrors.IsForbidden(err) {
			l.gaps.add("list gpubudgets, gpuclusterbudgets")
		}
		l.warn(fmt.Sprintf("%v: the budgets are not shown", err))
		return
	}
	l.read.budgets = b
}

// Read lists the cluster's objects (the DRA objects too when ch governs
// a DeviceClass), telling its progress when it is slow, and warns of what
// it could not read.
func (l live) Read(ctx context.Context, kc kubernetes.Interface, ch Charging, namespaces []string) (*clusterstate.State, error) {
	var p *progress
	if l.progress != nil {
		p = l.progress()
	}
	defer p.end()
	st, err := clusterstate.ReadWithProgress(ctx, kc, namespaces, p.listed)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster (no --state given): %w", err)
	}
	for _, w := range st.Warnings {
		l.warn(w)
	}
	l.gaps.add(st.Forbidden...)
	if ch.governs() {
		forbidden, err := readDRA(ctx, kc, namespaces, st.Objects, l.warn)
		if err != nil {
			return nil, fmt.Errorf("reading the cluster (no --state given): %w", err)
		}
		l.gaps.add(forbidden...)
	}
	return st, nil
}

// SortedNamespaces are the names of the namespaces of s, sorted.
func SortedNamespaces(s ledger.Snapshot) []string { return slices.Sorted(maps.Keys(s.Namespaces)) }
