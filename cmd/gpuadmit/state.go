package main

import (
	"context"
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/dra"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
)

// stateUsage is the help of --state.
const stateUsage = "dump of the cluster's Pods, Nodes, ResourceQuotas, ResourceClaims, ResourceClaimTemplates and ResourceSlices, " +
	"as 'kubectl get -o yaml' prints them (- for standard input); default: read the cluster"

// source is where usage and eval read the cluster's state: a dump
// (--state) or the cluster of the kubeconfig.
type source interface {
	// namespace is the namespace of a pod that names none.
	namespace() (string, error)
	// ledger builds the usage ledger from the cluster's Pods, Nodes,
	// ResourceQuotas, ResourceClaims, ResourceClaimTemplates and
	// ResourceSlices, charged as ch says. namespaces are those the command
	// reports on (nil: every one); reserve also reads their GPUUsage
	// reservations, by namespace (a dump has none; for every namespace,
	// those of the namespaces the state has GPU pods, claims or quotas in).
	ledger(ctx context.Context, ch charging, namespaces []string, reserve bool) (*ledger.Ledger, map[string][]reservation.Reservation, error)
	// user is who the requests come from (input.userInfo).
	user(ctx context.Context) (decision.UserInfo, error)
	// gpuadmit is the client that reads gpuadmit's own configuration and
	// policies in the cluster; nil for a dump.
	gpuadmit() (kubernetes.Interface, error)
}

// source returns the dump at path or, when path is empty, the cluster;
// warn reports what the cluster would not let it read.
func (c *cli) source(path string, warn func(string)) source {
	if path != "" {
		return dump{path: path, stdin: c.stdin, kube: c.kube}
	}
	return live{kube: c.kube, warn: warn, progress: c.startProgress}
}

// dump is a 'kubectl get -o yaml' dump of Pods, Nodes, ResourceQuotas (and
// Namespaces, ResourceClaims, ResourceClaimTemplates, ResourceSlices).
type dump struct {
	path  string
	stdin io.Reader
	kube  *genericclioptions.ConfigFlags // --as and --as-group only
}

func (dump) namespace() (string, error) { return "default", nil }

func (dump) gpuadmit() (kubernetes.Interface, error) { return nil, nil }

func (d dump) ledger(_ context.Context, ch charging, _ []string, _ bool) (*ledger.Ledger, map[string][]reservation.Reservation, error) {
	l, err := loadState(d.path, d.stdin, ch, logr.Discard())
	return l, nil, err
}

// loadState reads a cluster dump ('kubectl get -o yaml' of Pods, Nodes,
// ResourceQuotas, ...) and builds the usage ledger from it.
func loadState(path string, stdin io.Reader, ch charging, log logr.Logger) (*ledger.Ledger, error) {
	stdin, seen := teeStdin([]string{path}, stdin)
	objs, err := manifest.ReadFile(path, stdin)
	if err != nil {
		return nil, err
	}
	if len(objs.Pods)+len(objs.Nodes)+len(objs.Quotas)+len(objs.Namespaces)+
		len(objs.Claims)+len(objs.ClaimTemplates)+len(objs.Slices)+len(objs.DeviceClasses) == 0 {
		return nil, fmt.Errorf("%s: no Pod, Node, ResourceQuota, Namespace, ResourceClaim, ResourceClaimTemplate, ResourceSlice or DeviceClass found (%d other objects)%s",
			path, objs.Skipped, kindsHint([]string{path}, seen.Bytes()))
	}
	return ledgerOf(objs, ch, log), nil
}

// charging is how the ledger charges requests: the device families (the
// first at the first level of the output) and the charger of the
// ResourceClaims of governed DeviceClasses (nil: no claim is charged).
type charging struct {
	families []effective.Family
	claims   *dra.Charger
	// bound is the plausibility bound of each family's devices.
	bound func(family string) int64
}

// chargingOf is the configuration's charging, the webhook's.
func chargingOf(cfg *config.Configuration) (charging, error) {
	fams := config.Families(cfg)
	claims, err := dra.NewCharger(config.DeviceClasses(cfg), fams, config.ChargerOptions(cfg)...)
	if err != nil {
		return charging{}, fmt.Errorf("configuration: dra.deviceClasses: %w", err)
	}
	return charging{families: fams, claims: claims, bound: config.MaxDeviceMemoryMiB(cfg)}, nil
}

// governs reports whether any DeviceClass is governed (claims are read).
func (ch charging) governs() bool { return len(ch.claims.Classes()) > 0 }

// ledgerOf builds the usage ledger from a dump's or the cluster's objects:
// namespaces (their labels), then nodes (their devices resolve memory
// percentages), quotas, ResourceSlices (their devices size claims),
// ResourceClaimTemplates (a pod charges its templates' claims until they
// are recorded), claims, then pods. The DeviceClasses are not read: which
// classes are governed, and how, is the configuration's.
func ledgerOf(objs *manifest.Objects, ch charging, log logr.Logger) *ledger.Ledger {
	l := ledger.New(ledger.Options{Families: ch.families, Claims: ch.claims, MaxDeviceMemoryMiB: ch.bound, Log: log})
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
	warn func(string)
	// progress, when set, starts the lines that tell a slow read's
	// progress.
	progress func() *progress
}

// namespace is kubectl's: -n, else the context's, else "default".
func (l live) namespace() (string, error) {
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
	cfg.UserAgent = "gpuadmit/" + version
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

func (l live) gpuadmit() (kubernetes.Interface, error) { return l.client() }

func (l live) ledger(ctx context.Context, ch charging, namespaces []string, reserve bool) (*ledger.Ledger, map[string][]reservation.Reservation, error) {
	cfg, err := l.config()
	if err != nil {
		return nil, nil, err
	}
	kc, err := l.client()
	if err != nil {
		return nil, nil, err
	}
	st, err := l.read(ctx, kc, ch, namespaces)
	if err != nil {
		return nil, nil, err
	}
	led := ledgerOf(st.Objects, ch, logr.Discard())
	if !reserve {
		return led, nil, nil
	}
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("dynamic client: %w", err)
	}
	if namespaces == nil { // every namespace: those the state has
		namespaces = sortedNamespaces(led.Snapshot(nil))
	}
	reserved := map[string][]reservation.Reservation{}
	for _, ns := range namespaces {
		rs, err := clusterstate.Reservations(ctx, dc, ns, st.PodsResourceVersion)
		if err != nil {
			l.warn(fmt.Sprintf("%v: its reservations are not counted", err))
			continue
		}
		reserved[ns] = rs
	}
	return led, reserved, nil
}

// read lists the cluster's objects (the DRA objects too when ch governs
// a DeviceClass), telling its progress when it is slow, and warns of what
// it could not read.
func (l live) read(ctx context.Context, kc kubernetes.Interface, ch charging, namespaces []string) (*clusterstate.State, error) {
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
	if ch.governs() {
		if err := readDRA(ctx, kc, namespaces, st.Objects, l.warn); err != nil {
			return nil, fmt.Errorf("reading the cluster (no --state given): %w", err)
		}
	}
	return st, nil
}
