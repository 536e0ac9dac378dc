package server

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/gpuadmit/gpuadmit/pkg/policysource"
	"github.com/gpuadmit/gpuadmit/policy"
)

// icyRule is S2: S1's deny rule and one more.
const icyRule = operatorRule + "\ndeny contains \"namespace icy\" if input.namespace == \"icy\"\n"

// slowTest runs far past a 2 s test time limit without allocating much:
// what a policy test near the 5 s limit does on a CPU loaded by a start-up.
const slowTest = "package gpuadmit.slow_test\n\ntest_slow if {\n\tevery x in numbers.range(1, 100000) {\n\t\tevery y in numbers.range(1, 100000) {\n\t\t\tx + y > 0\n\t\t}\n\t}\n}\n"

// slowOpts times the slow test out in 2 s.
var slowOpts = policy.Options{TestTimeout: 2 * time.Second}

func accepted(t *testing.T, p *policySync) string {
	t.Helper()
	cm, err := p.kube.CoreV1().ConfigMaps("gpuadmit-system").Get(t.Context(), policysource.AcceptedConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the accepted set: %v", err)
	}
	return cm.Data[policysource.AcceptedDigestKey]
}

// TestTestTimeoutIsRetried attacks a replica's load under CPU load: a set
// rejected only because its tests ran past the time limit is loaded again
// with backoff, the cluster's set by a running replica as the accepted set
// by a starting one, never given up until a ConfigMap changes.
func TestTestTimeoutIsRetried(t *testing.T) {
	t.Run("the cluster's set", func(t *testing.T) {
		kube := fake.NewClientset(policyCM())
		a := replica(t, kube, slowOpts, policyCM())
		if err := a.sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		s1 := a.engine.Status().Revision
		slow := policyCM()
		slow.Data["slow_test.rego"] = slowTest
		a.list = (&flakyLister{cms: []*corev1.ConfigMap{slow}}).list
		if err := a.sync(t.Context()); !errors.Is(err, policy.ErrTestTimeout) {
			t.Fatalf("sync = %v, want a retry on ErrTestTimeout", err)
		}
		if a.lastHash != "" || a.engine.Status().Revision != s1 {
			t.Errorf("after the timeout: revision %s (want S1 %s), last hash %q (want none: load again)", a.engine.Status().Revision, s1, a.lastHash)
		}
	})
	t.Run("the accepted set at start-up", func(t *testing.T) {
		b := replica(t, fake.NewClientset(acceptedCM(t, map[string]string{"frozen.rego": operatorRule, "slow_test.rego": slowTest}, nil)),
			slowOpts, edited(brokenRule))
		if err := b.sync(t.Context()); !errors.Is(err, policy.ErrTestTimeout) {
			t.Errorf("sync = %v, want a retry on ErrTestTimeout", err)
		}
		notReadyFor(t, b, "policy tests ran past their time limit")
	})
}

// TestRejectingReplicaConvergesOnTheAcceptedSet attacks replicas left on
// different sets: A stores S2; B, whose informer shows an intermediate
// broken edit A never saw, rejects it while running S1. B must activate
// the accepted S2, as A runs; a rejected edit that every replica rejects
// (the accepted set is B's active one) loads nothing again.
func TestRejectingReplicaConvergesOnTheAcceptedSet(t *testing.T) {
	ctx := t.Context()
	kube := fake.NewClientset(policyCM())
	a := replica(t, kube, policy.Options{}, policyCM())
	b := replica(t, kube, policy.Options{}, policyCM())
	for _, p := range []*policySync{a, b} {
		if err := p.sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s2 := edited(icyRule)
	if _, err := kube.CoreV1().ConfigMaps("gpuadmit-system").Update(ctx, s2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	a.list = (&flakyLister{cms: []*corev1.ConfigMap{s2}}).list
	if err := a.sync(ctx); err != nil {
		t.Fatal(err)
	}
	b.list = (&flakyLister{cms: []*corev1.ConfigMap{edited(brokenRule)}}).list
	if err := b.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if ra, rb := a.engine.Status().Revision, b.engine.Status().Revision; ra != rb {
		t.Fatalf("B runs %s, A runs %s: the replicas disagree", rb, ra)
	}
	if got := denies(t, b, "icy"); !slices.Contains(got, "namespace icy") {
		t.Errorf("B does not run S2's rule: %q", got)
	}
	b.list = (&flakyLister{cms: []*corev1.ConfigMap{edited(brokenRule + "\n")}}).list
	if err := b.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n := testutil.ToFloat64(b.metrics.reloads.WithLabelValues("accepted-set-activated")); n != 1 {
		t.Errorf("accepted-set-activated %v times, want 1: the accepted set, already active, was loaded again", n)
	}
}

// TestSlowReplicaNeverStoresAnOlderSet attacks the accepted set's writes:
// B stored S2; C, whose informer still shows S1, activates S1 late. C must
// not write S1 over S2 (the policy ConfigMaps, read from the API server,
// are S2's): a replica starting next falls back to S2, as B runs.
func TestSlowReplicaNeverStoresAnOlderSet(t *testing.T) {
	ctx := t.Context()
	kube := fake.NewClientset(policyCM())
	s2 := edited(icyRule)
	if _, err := kube.CoreV1().ConfigMaps("gpuadmit-system").Update(ctx, s2, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := replica(t, kube, policy.Options{}, s2)
	if err := b.sync(ctx); err != nil {
		t.Fatal(err)
	}
	stored := accepted(t, b)
	c := replica(t, kube, policy.Options{}, policyCM())
	if err := c.sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := accepted(t, c); got != stored {
		t.Errorf("C stored its older set over B's: digest %s, want %s", got, stored)
	}
	if n := testutil.ToFloat64(c.metrics.reloads.WithLabelValues("persist-superseded")); n != 1 {
		t.Errorf("persist-superseded %v, want 1", n)
	}
}
