package admission

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"unicode/utf8"

	"github.com/go-logr/logr/funcr"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testclaim"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// recorded is one call of a fakeRecorder.
type recorded struct {
	ref             corev1.ObjectReference
	reason, message string
}

// fakeRecorder records the denials it is handed; with release set it
// blocks in Denied until release is closed, with panics it panics.
type fakeRecorder struct {
	mu      sync.Mutex
	got     []recorded
	release chan struct{}
	panics  bool
}

func (r *fakeRecorder) Denied(_ context.Context, ref corev1.ObjectReference, reason, message string) {
	r.mu.Lock()
	r.got = append(r.got, recorded{ref: ref, reason: reason, message: message})
	r.mu.Unlock()
	if r.release != nil {
		<-r.release
	}
	if r.panics {
		panic("the event sink is broken")
	}
}

func (r *fakeRecorder) calls() []recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]recorded(nil), r.got...)
}

var (
	quotaDenial = decision.Result{Denials: []string{"namespace team-a over its nvidia.com/gpumem limit"},
		Exceeded: []decision.LimitCheck{{Family: "nvidia", Resource: "nvidia.com/gpumem", Pod: 30720, Limit: 24576, Exceeded: true}}}
	policyDenial = decision.Result{Denials: []string{"team-a may not ask for gpucores"}}
	teamA        = corev1.ObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "team-a", Namespace: "team-a"}
)

// quotaHint ends a quota denial's Event in team-a.
const quotaHint = "; the namespace's GPU usage against its limits: kubectl get gpuusage -n team-a"

// TestDenialEvents: a denial (not of a dry run) is recorded once, about
// the pod's controller in the pod's namespace, else about the namespace,
// with the reason of the denial and a message naming the pod; an allowed
// pod, an error, a refusal before any decision and a dry run record
// nothing. synctest.Wait lets the recording goroutine finish (or block)
// before the calls are read, so "nothing" is exact.
func TestDenialEvents(t *testing.T) {
	rs := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "rs-uid", Controller: ptr.To(true)}
	onRS := corev1.ObjectReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f", UID: "rs-uid", Namespace: "team-a"}
	notController := rs
	notController.Controller = nil
	forged := rs
	forged.Name = strings.Repeat("n", 300)
	const quotaMsg = "namespace team-a over its nvidia.com/gpumem limit" + quotaHint
	for _, tc := range []struct {
		name         string
		owners       []metav1.OwnerReference
		generateName string
		verdict      decision.Result
		err          error
		blocked      error
		dryRun       bool
		want         []recorded
	}{
		{name: "over the quota, owned by a ReplicaSet: on the ReplicaSet", owners: []metav1.OwnerReference{rs}, verdict: quotaDenial,
			want: []recorded{{onRS, EventReasonQuotaExceeded, "pod team-a/p denied: " + quotaMsg}}},
		{name: "over the quota, no owner: on the namespace", verdict: quotaDenial,
			want: []recorded{{teamA, EventReasonQuotaExceeded, "pod team-a/p denied: " + quotaMsg}}},
		{name: "an owner that is not the controller: on the namespace", owners: []metav1.OwnerReference{notController}, verdict: quotaDenial,
			want: []recorded{{teamA, EventReasonQuotaExceeded, "pod team-a/p denied: " + quotaMsg}}},
		{name: "an oversized owner (a forged review): on the namespace", owners: []metav1.OwnerReference{forged}, verdict: quotaDenial,
			want: []recorded{{teamA, EventReasonQuotaExceeded, "pod team-a/p denied: " + quotaMsg}}},
		{name: "another rule denied it", verdict: policyDenial,
			want: []recorded{{teamA, EventReasonPolicyDenied, "pod team-a/p denied: team-a may not ask for gpucores"}}},
		{name: "a name still to be generated", generateName: "web-7d9f-", owners: []metav1.OwnerReference{rs}, verdict: quotaDenial,
			want: []recorded{{onRS, EventReasonQuotaExceeded, "pod team-a/web-7d9f-* denied: " + quotaMsg}}},
		{name: "a denial without a message", verdict: decision.Result{},
			want: []recorded{{teamA, EventReasonPolicyDenied, "pod team-a/p denied: denied by the GPU admission policy (no message given)"}}},
		{name: "dry run: nothing", verdict: quotaDenial, dryRun: true},
		{name: "allowed: nothing", verdict: decision.Result{Allowed: true, Effective: effective.UsageOf("nvidia", effective.Vector{GPU: 1, MemMiB: 1})}},
		{name: "no decision (500): nothing", err: errors.New("the API server is unreachable")},
		{name: "not ready (500): nothing", verdict: quotaDenial, blocked: errors.New("the watches have not synced")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &fakeRecorder{}
				v := &Validator{Gate: gateFunc(func() error { return tc.blocked }), GPUPods: &quotaDecider{},
					Reserver: fixedReserver{verdict: tc.verdict, err: tc.err}, Events: rec}
				pod := testpod.New("p").NS("team-a").UID("uid-1").App("c", testpod.GPU(1), testpod.Mem(30720)).Build()
				pod.OwnerReferences = tc.owners
				if tc.generateName != "" {
					pod.Name, pod.GenerateName = "", tc.generateName
				}
				resp := v.Handle(t.Context(), review(t, admissionv1.Create, pod, tc.dryRun))
				synctest.Wait()
				got := rec.calls()
				if len(got) != len(tc.want) {
					t.Fatalf("recorded %+v, want %+v (answer %+v)", got, tc.want, resp.Result)
				}
				for i := range got {
					if got[i] != tc.want[i] {
						t.Errorf("recorded\n %+v\nwant\n %+v", got[i], tc.want[i])
					}
				}
			})
		})
	}
}

// TestDenialEventsOfClaims: a claim's denial is recorded about its
// controller (the pod the claim controller generated it for), else about
// the namespace; not for a dry run.
func TestDenialEventsOfClaims(t *testing.T) {
	pod := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "trainer", UID: "pod-uid", Controller: ptr.To(true)}
	for _, tc := range []struct {
		name   string
		owners []metav1.OwnerReference
		dryRun bool
		want   []recorded
	}{
		{name: "generated for a pod: on the pod", owners: []metav1.OwnerReference{pod},
			want: []recorded{{corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: "trainer", UID: "pod-uid", Namespace: "team-a"},
				EventReasonQuotaExceeded, "ResourceClaim team-a/c denied: namespace team-a over its nvidia.com/gpumem limit" + quotaHint}}},
		{name: "no owner: on the namespace",
			want: []recorded{{teamA, EventReasonQuotaExceeded, "ResourceClaim team-a/c denied: namespace team-a over its nvidia.com/gpumem limit" + quotaHint}}},
		{name: "dry run: nothing", owners: []metav1.OwnerReference{pod}, dryRun: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &fakeRecorder{}
				v := &ClaimValidator{Claims: governsHAMi{}, Reserver: &claimReserver{verdict: quotaDenial}, Events: rec}
				c := testclaim.HAMiDRA("team-a", "c", 1, 30720, 0)
				c.UID, c.OwnerReferences = "claim-uid", tc.owners
				req := claimReview(t, admissionv1.Create, c, "ResourceClaim", "r1")
				req.DryRun = &tc.dryRun
				if resp := v.Handle(t.Context(), req); resp.Allowed {
					t.Fatal("allowed")
				}
				synctest.Wait()
				if got := rec.calls(); len(got) != len(tc.want) || (len(got) == 1 && got[0] != tc.want[0]) {
					t.Errorf("recorded %+v, want %+v", got, tc.want)
				}
			})
		})
	}
}

// TestDenialEventRecorderCannotHurt: a recorder that blocks, or panics,
// leaves the answer as it is (403 with the policies' message), returned
// while the recorder still blocks; the panic is logged with the request's
// logger.
func TestDenialEventRecorderCannotHurt(t *testing.T) {
	for _, tc := range []struct {
		name    string
		blocks  bool
		panics  bool
		wantLog string
	}{
		{name: "blocks", blocks: true},
		{name: "panics", panics: true, wantLog: "recording the denial's Event panicked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &fakeRecorder{panics: tc.panics}
				if tc.blocks {
					rec.release = make(chan struct{})
				}
				var mu sync.Mutex
				var lines []string
				log := funcr.New(func(_, args string) { mu.Lock(); lines = append(lines, args); mu.Unlock() }, funcr.Options{})
				v := &Validator{GPUPods: &quotaDecider{}, Reserver: fixedReserver{verdict: quotaDenial}, Events: rec}
				pod := testpod.New("p").NS("team-a").UID("uid-1").App("c", testpod.GPU(1), testpod.Mem(30720)).Build()
				resp := v.Handle(logf.IntoContext(t.Context(), log), review(t, admissionv1.Create, pod, false))
				if resp.Allowed || resp.Result.Code != http.StatusForbidden || resp.Result.Message != quotaDenial.Denials[0] {
					t.Errorf("answer %+v, want 403 %q", resp.Result, quotaDenial.Denials[0])
				}
				synctest.Wait() // the recorder blocks (durably) or has panicked
				if n := len(rec.calls()); n != 1 {
					t.Errorf("the recorder was called %d times, want once", n)
				}
				if tc.blocks {
					close(rec.release)
				}
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if logged := strings.Join(lines, "\n"); tc.wantLog != "" && !strings.Contains(logged, tc.wantLog) {
					t.Errorf("log %q lacks %q", logged, tc.wantLog)
				}
			})
		})
	}
}

// TestDenialEventMessageBounded: the policies' messages (any length, any
// runes) reach the Event cut to MaxEventMessage bytes of valid UTF-8,
// still naming the pod.
func TestDenialEventMessageBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &fakeRecorder{}
		long := decision.Result{Denials: []string{strings.Repeat("é", 600), strings.Repeat("x", 5000)}}
		v := &Validator{GPUPods: &quotaDecider{}, Reserver: fixedReserver{verdict: long}, Events: rec}
		pod := testpod.New("p").NS("team-a").UID("uid-1").App("c", testpod.GPU(1), testpod.Mem(1)).Build()
		resp := v.Handle(t.Context(), review(t, admissionv1.Create, pod, false))
		if len(resp.Result.Message) < 6000 {
			t.Errorf("the answer itself was cut: %d bytes", len(resp.Result.Message))
		}
		synctest.Wait()
		got := rec.calls()
		if len(got) != 1 {
			t.Fatalf("recorded %d events, want 1", len(got))
		}
		m := got[0].message
		if len(m) > MaxEventMessage || !utf8.ValidString(m) || !strings.HasPrefix(m, "pod team-a/p denied: éé") || !strings.HasSuffix(m, "...") {
			t.Errorf("message of %d bytes (valid UTF-8 %v): %.40q...%q", len(m), utf8.ValidString(m), m, m[max(0, len(m)-10):])
		}
	})
}

// TestQuotaDenialEventSendsToGPUUsage: a quota denial's Event, however long
// its message, ends by naming where the namespace's users read its GPU
// usage against its limits, within MaxEventMessage.
func TestQuotaDenialEventSendsToGPUUsage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &fakeRecorder{}
		long := quotaDenial
		long.Denials = []string{strings.Repeat("x", 5000)}
		v := &Validator{GPUPods: &quotaDecider{}, Reserver: fixedReserver{verdict: long}, Events: rec}
		pod := testpod.New("p").NS("team-a").UID("uid-1").App("c", testpod.GPU(1), testpod.Mem(1)).Build()
		v.Handle(t.Context(), review(t, admissionv1.Create, pod, false))
		synctest.Wait()
		got := rec.calls()
		if len(got) != 1 {
			t.Fatalf("recorded %d events, want 1", len(got))
		}
		if m := got[0].message; len(m) > MaxEventMessage || !strings.HasSuffix(m, "...; the namespace's GPU usage against its limits: kubectl get gpuusage -n team-a") {
			t.Errorf("message of %d bytes ends %q", len(m), m[max(0, len(m)-90):])
		}
	})
}

func TestBounded(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven ..."},
		{"aé" + "bcdefgh", 6, "aé..."},
		{"abé" + "xxxx", 6, "ab..."}, // é is two bytes: the cut falls inside it, so before it
		{"aéb", 6, "aéb"},
	} {
		if got := bounded(tc.in, tc.n); got != tc.want || len(got) > tc.n {
			t.Errorf("bounded(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
	}
}
