package admission

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// computeDemand is the Demander of the tests: effective.Compute with HAMi's
// defaults and a 24 GiB device for percentages.
type computeDemand struct{}

func (computeDemand) Demand(_ context.Context, pod *corev1.Pod) (effective.Demands, error) {
	if !effective.Nvidia().Requests(pod) {
		return nil, nil
	}
	return effective.ComputeAll(pod, []effective.Family{effective.Nvidia()}, map[string]effective.Options{"nvidia": {DeviceMemoryMiB: 24576}})
}

// quotaDecider allows while used+reserved+demand fits limit (MiB), reading
// the reservations of a fakeLedger, like the real decision would.
type quotaDecider struct {
	ledger *fakeLedger
	limit  int64
	err    error
	calls  []bool // dryRun of each call
	mu     sync.Mutex
}

func (d *quotaDecider) Requests(pod *corev1.Pod) bool {
	return effective.Nvidia().Requests(pod)
}

func (d *quotaDecider) Decide(_ context.Context, req decision.Request) (decision.Result, error) {
	pod := req.Pod
	d.mu.Lock()
	d.calls = append(d.calls, req.DryRun)
	d.mu.Unlock()
	if d.err != nil {
		return decision.Result{}, d.err
	}
	dem, err := computeDemand{}.Demand(context.Background(), pod)
	if err != nil {
		return decision.Result{Denials: []string{err.Error()}}, nil
	}
	if dem == nil {
		return decision.Result{Allowed: true}, nil
	}
	used := d.ledger.used(pod.Namespace)
	eff := dem.Effective()
	if mem := eff.Of("nvidia").MemMiB; used+mem > d.limit {
		return decision.Result{Effective: eff, Denials: []string{"namespace " + pod.Namespace + " over its nvidia.com/gpumem limit"},
			Exceeded: []decision.LimitCheck{{Family: "nvidia", Resource: "nvidia.com/gpumem", Used: used, Pod: mem, After: used + mem,
				Limit: d.limit, Quota: "q", Exceeded: true}}}, nil
	}
	return decision.Result{Allowed: true, Effective: eff, Warnings: []string{"w1"}}, nil
}

// fakeLedger records reservations; like admitqueue.Store it decides the
// reviews one at a time.
type fakeLedger struct {
	decider *quotaDecider
	order   sync.Mutex // held across decide and reserve
	mu      sync.Mutex
	res     map[types.UID]effective.Usage
	ns      map[types.UID]string
	fail    bool
}

func newFakeLedger() *fakeLedger {
	return &fakeLedger{res: map[types.UID]effective.Usage{}, ns: map[types.UID]string{}}
}

// Admit decides and, when allowed with a demand, records the reservation
// (a single replica's view of what admitqueue.Store does).
func (l *fakeLedger) Admit(ctx context.Context, uid types.UID, req decision.Request) (decision.Result, error) {
	l.order.Lock()
	defer l.order.Unlock()
	res, err := l.decider.Decide(ctx, req)
	if err != nil || !res.Allowed || res.Effective.IsZero() || req.DryRun {
		return res, err
	}
	if l.fail {
		return decision.Result{}, errors.New("writing the reservation: the API server is unreachable")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.res[uid], l.ns[uid] = res.Effective, req.Namespace
	return res, nil
}

// withQuota returns a fakeLedger decided by a quotaDecider of limit MiB
// (decideErr: every decision fails).
func withQuota(limit int64, decideErr error) (*fakeLedger, *quotaDecider) {
	l := newFakeLedger()
	l.decider = &quotaDecider{ledger: l, limit: limit, err: decideErr}
	return l, l.decider
}

func (l *fakeLedger) used(ns string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var n int64
	for uid, v := range l.res {
		if l.ns[uid] == ns {
			n += v.Of("nvidia").MemMiB
		}
	}
	return n
}

// review builds an admission request for pod.
func review(t testing.TB, op admissionv1.Operation, pod *corev1.Pod, dryRun bool) admission.Request {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		UID:       types.UID("req-" + pod.Name),
		Kind:      metav1.GroupVersionKind{Version: "v1", Kind: "Pod"},
		Resource:  metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		Namespace: pod.Namespace,
		Name:      pod.Name,
		Operation: op,
		DryRun:    &dryRun,
		Object:    runtime.RawExtension{Raw: raw},
	}}
}

// fixedReserver answers every review with verdict (or err).
type fixedReserver struct {
	verdict decision.Result
	err     error
}

func (r fixedReserver) Admit(context.Context, types.UID, decision.Request) (decision.Result, error) {
	return r.verdict, r.err
}
