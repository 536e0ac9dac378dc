package budget

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// tracked is one budget as every replica holds it.
type tracked struct {
	ref        Ref
	generation int64
	window     burn.Window
	resources  []resourceSpec
	problems   []string
	// cluster: a GPUClusterBudget, selecting the namespaces names or
	// matching selector (nil: none, or unusable: see problems).
	cluster  bool
	selector labels.Selector
	names    map[string]bool
	// cp is the checkpoint of the status as last seen.
	cp checkpoint
	// departed are the pods whose namespace stopped being selected (a
	// GPUClusterBudget), with when this replica saw it: their burn up to
	// then still counts until a checkpoint folds it.
	departed map[types.UID]time.Time
	// released are the entries this replica's checkpoints left out
	// (released.go).
	released map[types.UID]releasedEntry
	// memo is the standing's memo (memo.go).
	memo memoCell
}

// resourceSpec is one enforced key of spec.hard.
type resourceSpec struct {
	name corev1.ResourceName
	key  burn.Key
	hard burn.Amount
}

// keyOf maps a governed resource name to what burns it.
func keyOf(fams []effective.Family, name corev1.ResourceName) (burn.Key, bool) {
	for i := range fams {
		for _, d := range effective.Dimensions() {
			if n := fams[i].Names.Of(d); n != "" && n == name {
				return burn.Key{Family: fams[i].Name, Dimension: d}, true
			}
		}
	}
	return burn.Key{}, false
}

// nameOf is the resource name of k ("" when no family has it).
func nameOf(fams []effective.Family, k burn.Key) corev1.ResourceName {
	for i := range fams {
		if fams[i].Name == k.Family {
			return fams[i].Names.Of(k.Dimension)
		}
	}
	return ""
}

// parseSpec reads a budget's window and hard: a window that cannot be
// computed (an unknown time zone) is enforced as the same calendar window
// in UTC and reported; a key no governed family has, or a value that is
// not a number of hours, is reported and not enforced; a negative value is
// reported and enforced as 0 (fails closed: spent).
func (t *Tracker) parseSpec(ref Ref, w gpuadmitv1.BudgetWindow, hard corev1.ResourceList) *tracked {
	b := &tracked{ref: ref}
	var rolling time.Duration
	if w.Rolling != nil {
		rolling = w.Rolling.Duration
	}
	win, err := burn.ParseWindow(w.Calendar, w.TimeZone, rolling)
	if err != nil {
		b.problems = append(b.problems, fmt.Sprintf("spec.window: %v", err))
		if win, err = burn.ParseWindow(orMonthly(w.Calendar), "", 0); err != nil {
			win, _ = burn.ParseWindow(gpuadmitv1.WindowMonthly, "", 0)
		}
		b.problems[len(b.problems)-1] += "; enforced as " + win.String()
	}
	b.window = win
	for _, name := range sortedNames(hard) {
		key, ok := keyOf(t.opts.Families, name)
		if !ok {
			b.problems = append(b.problems, fmt.Sprintf("spec.hard[%s]: no governed device family has this resource; not enforced", name))
			continue
		}
		q := hard[name]
		amount, err := burn.HoursToAmount(q)
		if err != nil && q.Sign() < 0 {
			// Fail closed, as a quota's negative value: spent, every
			// new pod burning it denied.
			b.problems = append(b.problems, fmt.Sprintf("spec.hard[%s]: %v; enforced as 0 (spent)", name, err))
			amount, err = 0, nil
		}
		if err != nil {
			b.problems = append(b.problems, fmt.Sprintf("spec.hard[%s]: %v; not enforced", name, err))
			continue
		}
		b.resources = append(b.resources, resourceSpec{name: name, key: key, hard: amount})
	}
	return b
}

func orMonthly(calendar string) string {
	switch calendar {
	case gpuadmitv1.WindowMonthly, gpuadmitv1.WindowWeekly, gpuadmitv1.WindowDaily:
		return calendar
	}
	return gpuadmitv1.WindowMonthly
}

func sortedNames(rl corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(rl))
	for n := range rl {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// parseSelection reads a GPUClusterBudget's namespaces and selector (an
// unusable selector selects nothing by labels, and is reported).
func (b *tracked) parseSelection(sel *metav1.LabelSelector, names []string) {
	b.cluster = true
	b.names = make(map[string]bool, len(names))
	for _, n := range names {
		b.names[n] = true
	}
	if sel == nil {
		return
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		b.problems = append(b.problems, fmt.Sprintf("spec.namespaceSelector: %v; no namespace selected by labels", err))
		return
	}
	b.selector = s
}

// selects reports whether b counts the pods of namespace ns now.
func (b *tracked) selects(ns string, nsLabels map[string]string, known bool) bool {
	if !b.cluster {
		return ns == b.ref.Namespace
	}
	if b.names[ns] {
		return true
	}
	return known && b.selector != nil && b.selector.Matches(labels.Set(nsLabels))
}

// UpsertBudget records a GPUBudget: its spec and its status's checkpoint.
func (t *Tracker) UpsertBudget(o *gpuadmitv1.GPUBudget) {
	ref := Ref{Kind: KindBudget, Namespace: o.Namespace, Name: o.Name}
	b := t.parseSpec(ref, o.Spec.Window, o.Spec.Hard)
	b.generation = o.Generation
	b.cp = t.readCheckpoint(o.Status.Checkpoint)
	t.store(b)
}

// UpsertClusterBudget records a GPUClusterBudget.
func (t *Tracker) UpsertClusterBudget(o *gpuadmitv1.GPUClusterBudget) {
	ref := Ref{Kind: KindClusterBudget, Name: o.Name}
	b := t.parseSpec(ref, o.Spec.Window, o.Spec.Hard)
	b.parseSelection(o.Spec.NamespaceSelector, o.Spec.Namespaces)
	b.generation = o.Generation
	b.cp = t.readCheckpoint(o.Status.Checkpoint)
	t.store(b)
}

// DeleteBudget forgets a GPUBudget.
func (t *Tracker) DeleteBudget(namespace, name string) {
	t.forget(Ref{Kind: KindBudget, Namespace: namespace, Name: name})
}

// DeleteClusterBudget forgets a GPUClusterBudget.
func (t *Tracker) DeleteClusterBudget(name string) {
	t.forget(Ref{Kind: KindClusterBudget, Name: name})
}

func (t *Tracker) store(b *tracked) {
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.budgets[b.ref]
	if old != nil {
		b.departed = old.departed
		b.released = old.released
		if !slices.Equal(old.problems, b.problems) {
			for _, p := range b.problems {
				t.log.Info("budget not enforced as written", "kind", b.ref.Kind, "namespace", b.ref.Namespace, "name", b.ref.Name, "problem", p)
			}
		}
	}
	b.pruneDeparted()
	t.budgets[b.ref] = b
	t.dropFoldedLocked()
}

func (t *Tracker) forget(ref Ref) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.budgets, ref)
	t.dropFoldedLocked()
}

// pruneDeparted drops the departures the checkpoint folded.
func (b *tracked) pruneDeparted() {
	for uid, at := range b.departed {
		if until, ok := b.cp.foldedPods[uid]; ok && !until.Before(at) {
			delete(b.departed, uid)
		}
	}
}
