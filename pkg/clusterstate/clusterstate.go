package clusterstate

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuadmit/gpuadmit/pkg/manifest"
	"github.com/gpuadmit/gpuadmit/pkg/resourceversion"
)

// pageSize is the number of objects asked for per list request.
const pageSize = 500

// State is what ReadWithProgress found.
type State struct {
	// Objects holds the Pods, Nodes and ResourceQuotas (Workloads and
	// Skipped stay empty).
	Objects *manifest.Objects
	// PodsResourceVersion is the resourceVersion the pods were listed at
	// (the smallest, when they were listed per namespace); "" when unknown.
	PodsResourceVersion string
	// Warnings say what could not be read and what that leaves out.
	Warnings []string
	// Forbidden names each read the user was refused ("list nodes"): what
	// the state lacks that the webhook reads.
	Forbidden []string
	// progress, when set, is told the number of pods listed so far after
	// each page.
	progress func(pods int)
}

// ReadWithProgress lists the cluster's Pods, Nodes and ResourceQuotas.
// namespaces are the namespaces the caller reports on: nil means every
// namespace; else only their ResourceQuotas and Namespace objects (for their
// labels) are read, and their pods are what is listed when listing every
// namespace's pods is forbidden. progress, when not nil, is told the number
// of pods listed so far after each page of pods, for a command line that
// shows a long read's progress.
func ReadWithProgress(ctx context.Context, c kubernetes.Interface, namespaces []string, progress func(pods int)) (*State, error) {
	st := &State{Objects: &manifest.Objects{}, progress: progress}
	if err := st.readNodes(ctx, c); err != nil {
		return nil, err
	}
	quotaScope := namespaces
	if quotaScope == nil {
		quotaScope = []string{metav1.NamespaceAll}
	}
	for _, ns := range quotaScope {
		if err := st.readQuotas(ctx, c, ns); err != nil {
			return nil, err
		}
	}
	for _, ns := range namespaces {
		if err := st.readNamespace(ctx, c, ns); err != nil {
			return nil, err
		}
	}
	return st, st.readPods(ctx, c, namespaces)
}

// readNamespace gets one namespace, for its labels.
func (st *State) readNamespace(ctx context.Context, c kubernetes.Interface, name string) error {
	ns, err := c.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err), apierrors.IsNotFound(err):
		st.Warnings = append(st.Warnings, fmt.Sprintf("cannot read namespace %q (%v): the policies see no namespace labels", name, err))
		if apierrors.IsForbidden(err) {
			st.Forbidden = append(st.Forbidden, "get namespace "+name)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading namespace %q: %w", name, err)
	}
	st.Objects.Namespaces = append(st.Objects.Namespaces, ns)
	return nil
}

func (st *State) readNodes(ctx context.Context, c kubernetes.Interface) error {
	err := pages(ctx, func(opts metav1.ListOptions) (metav1.ListInterface, error) {
		l, err := c.CoreV1().Nodes().List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			st.Objects.Nodes = append(st.Objects.Nodes, &l.Items[i])
		}
		return l, nil
	})
	if apierrors.IsForbidden(err) {
		st.Warnings = append(st.Warnings, fmt.Sprintf("cannot list nodes (%v): no device capacity or device usage is known", err))
		st.Forbidden = append(st.Forbidden, "list nodes")
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	return nil
}

func (st *State) readQuotas(ctx context.Context, c kubernetes.Interface, ns string) error {
	err := pages(ctx, func(opts metav1.ListOptions) (metav1.ListInterface, error) {
		l, err := c.CoreV1().ResourceQuotas(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		for i := range l.Items {
			st.Objects.Quotas = append(st.Objects.Quotas, &l.Items[i])
		}
		return l, nil
	})
	if err != nil {
		return fmt.Errorf("listing resourcequotas%s: %w", in(ns), err)
	}
	return nil
}

// readPods lists every namespace's pods or, when that is forbidden and
// namespaces names some, theirs.
func (st *State) readPods(ctx context.Context, c kubernetes.Interface, namespaces []string) error {
	rv, err := st.listPods(ctx, c, metav1.NamespaceAll)
	if err == nil {
		st.PodsResourceVersion = rv
		return nil
	}
	if !apierrors.IsForbidden(err) || len(namespaces) == 0 {
		return fmt.Errorf("listing pods in all namespaces: %w", err)
	}
	st.Warnings = append(st.Warnings, fmt.Sprintf(
		"cannot list pods in all namespaces (%v): reading namespace %q only; device usage on nodes counts its pods only", err, namespaces))
	st.Forbidden = append(st.Forbidden, "list pods in all namespaces")
	st.Objects.Pods = nil
	rvs := make([]string, 0, len(namespaces))
	for _, ns := range namespaces {
		rv, err := st.listPods(ctx, c, ns)
		if err != nil {
			return fmt.Errorf("listing pods%s: %w", in(ns), err)
		}
		rvs = append(rvs, rv)
	}
	st.PodsResourceVersion = oldest(rvs)
	return nil
}

// oldest returns the earliest resourceVersion of rvs ("" when one is not
// well formed).
func oldest(rvs []string) string {
	out := ""
	for _, rv := range rvs {
		if !resourceversion.Valid(rv) {
			return ""
		}
		if out == "" {
			out = rv
		}
		out = resourceversion.Min(out, rv)
	}
	return out
}

// listPods appends the pods of ns and returns the list's resourceVersion.
func (st *State) listPods(ctx context.Context, c kubernetes.Interface, ns string) (string, error) {
	var rv string
	err := pages(ctx, func(opts metav1.ListOptions) (metav1.ListInterface, error) {
		l, err := c.CoreV1().Pods(ns).List(ctx, opts)
		if err != nil {
			return nil, err
		}
		if rv == "" {
			rv = l.ResourceVersion
		}
		for i := range l.Items {
			st.Objects.Pods = append(st.Objects.Pods, &l.Items[i])
		}
		if st.progress != nil {
			st.progress(len(st.Objects.Pods))
		}
		return l, nil
	})
	return rv, err
}

// pages calls list for every page of a list (each page of the same
// snapshot, as continue tokens keep it).
func pages(ctx context.Context, list func(metav1.ListOptions) (metav1.ListInterface, error)) error {
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		l, err := list(opts)
		if err != nil {
			return err
		}
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return nil
		}
	}
}

func in(ns string) string {
	if ns == metav1.NamespaceAll {
		return " in all namespaces"
	}
	return " in namespace " + ns
}
