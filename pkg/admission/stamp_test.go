package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/stamp"
)

const rsController = "system:serviceaccount:kube-system:replicaset-controller"

func testStamper(t testing.TB) *stamp.Stamper {
	t.Helper()
	s, err := stamp.New(bytes.Repeat([]byte{3}, stamp.MinKeyBytes), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// applied applies resp's patch to raw and returns the result's annotations.
func appliedAnnotations(t *testing.T, raw []byte, resp admission.Response) map[string]string {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("refused: %+v", resp.Result)
	}
	out := raw
	if len(resp.Patches) > 0 {
		ops, err := json.Marshal(resp.Patches)
		if err != nil {
			t.Fatal(err)
		}
		p, err := jsonpatchapply.DecodePatch(ops)
		if err != nil {
			t.Fatal(err)
		}
		if out, err = p.Apply(raw); err != nil {
			t.Fatalf("applying %s: %v", ops, err)
		}
	}
	var obj struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(out, &obj); err != nil {
		t.Fatal(err)
	}
	return obj.Metadata.Annotations
}

func withStamp(b *testpod.Builder, a map[string]string) *testpod.Builder {
	for _, k := range stamp.Annotations() {
		if v, ok := a[k]; ok {
			b = b.Annotate(k, v)
		}
	}
	return b
}

// TestMutatorStampsTheRequester attacks the pod stamp at CREATE: a name
// written by hand, a valid stamp copied from another pod, a controller's
// pod from an unstamped or forged template; whatever the pod carries,
// the stamp that results verifies to the requester, or to the user of
// the template's valid stamp when a trusted controller copied it.
func TestMutatorStampsTheRequester(t *testing.T) {
	s := testStamper(t)
	gpu := func() *testpod.Builder { return testpod.New("p").NS("ml").App("c", testpod.GPU(1)) }
	rs := func() *testpod.Builder { return gpu().Controller("apps/v1", "ReplicaSet", "r") }
	const rcController = "system:serviceaccount:kube-system:replication-controller"
	alice := s.Stamp("ml", "alice")
	forged := map[string]string{stamp.UserAnnotation: "alice", stamp.SignatureAnnotation: s.Sign("ml", "bob")}
	for _, c := range []struct {
		name      string
		pod       *corev1.Pod
		requester string
		want      string
	}{
		{"bob writes alice's name", withStamp(gpu(), forged).Build(), "bob", "bob"},
		{"bob copies alice's valid stamp", withStamp(gpu(), alice).Build(), "bob", "bob"},
		{"bob copies a stamp from another namespace", withStamp(gpu(), s.Stamp("dev", "alice")).Build(), "bob", "bob"},
		{"bob writes only a name", gpu().Annotate(stamp.UserAnnotation, "alice").Build(), "bob", "bob"},
		{"a plain pod", gpu().Build(), "bob", "bob"},
		{"a pod without GPUs", testpod.New("web").NS("ml").App("c", testpod.CPU("1")).Build(), "bob", "bob"},
		{"an invalid GPU pod", testpod.New("bad").NS("ml").App("c", testpod.Res(testpod.MemName, "1.5")).Build(), "bob", "bob"},
		{"the controller copies alice's stamp", withStamp(rs(), alice).Build(), rsController, "alice"},
		{"the controller copies a forged stamp", withStamp(rs(), forged).Build(), rsController, rsController},
		{"the controller's template had none", rs().Build(), rsController, rsController},
		{"posing as the controller", withStamp(rs(), alice).Build(), "system:serviceaccount:ml:replicaset-controller",
			"system:serviceaccount:ml:replicaset-controller"},
		{"the replication controller copies alice's stamp", withStamp(gpu(), alice).Controller("v1", "ReplicationController", "r").Build(),
			rcController, "alice"},
		{"a trusted creator's pod with no controller", withStamp(gpu(), alice).Build(), rsController, rsController},
		{"a trusted creator's pod controlled by an unstamped kind", withStamp(gpu(), alice).Controller("ray.io/v1", "RayService", "r").Build(),
			"system:kube-controller-manager", "system:kube-controller-manager"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &Mutator{Demand: computeDemand{}, Stamp: s}
			req := review(t, admissionv1.Create, c.pod, false)
			req.UserInfo.Username = c.requester
			got := appliedAnnotations(t, req.Object.Raw, m.Handle(t.Context(), req))
			user, ok := s.Verified("ml", got)
			if !ok || user != c.want {
				t.Errorf("stamp after the webhook: %q (verifies: %v), want %q", got, ok, c.want)
			}
		})
	}
}

// TestMutatorRestoresTheStampOnUpdate: an annotation edit on a running pod
// (another user's name, another user's valid stamp, removing it) is undone:
// the pod keeps the stamp it had.
func TestMutatorRestoresTheStampOnUpdate(t *testing.T) {
	s := testStamper(t)
	gpu := func() *testpod.Builder { return testpod.New("p").NS("ml").App("c", testpod.GPU(1)) }
	bob, alice := s.Stamp("ml", "bob"), s.Stamp("ml", "alice")
	for _, c := range []struct {
		name     string
		old, pod *corev1.Pod
	}{
		{"bob writes alice's valid stamp", withStamp(gpu(), bob).Build(), withStamp(gpu(), alice).Build()},
		{"bob writes alice's name", withStamp(gpu(), bob).Build(), gpu().Annotate(stamp.UserAnnotation, "alice").
			Annotate(stamp.SignatureAnnotation, bob[stamp.SignatureAnnotation]).Build()},
		{"bob removes the stamp", withStamp(gpu(), bob).Build(), gpu().Annotate("x", "y").Build()},
		{"an unstamped pod gets alice's stamp", gpu().Annotate("x", "y").Build(), withStamp(gpu(), alice).Build()},
		{"an unstamped pod without annotations", gpu().Build(), withStamp(gpu(), alice).Build()},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := &Mutator{Demand: computeDemand{}, Stamp: s}
			req := review(t, admissionv1.Update, c.pod, false)
			req.UserInfo.Username = "alice"
			oldRaw, err := json.Marshal(c.old)
			if err != nil {
				t.Fatal(err)
			}
			req.OldObject = runtime.RawExtension{Raw: oldRaw}
			got := appliedAnnotations(t, req.Object.Raw, m.Handle(t.Context(), req))
			for _, k := range stamp.Annotations() {
				want, had := c.old.Annotations[k]
				if v, has := got[k]; has != had || v != want {
					t.Errorf("%s after the update: %q (present %v), want %q (present %v)", k, v, has, want, had)
				}
			}
		})
	}
}

func TestMutatorUpdateWithoutOldObjectIsRefused(t *testing.T) {
	m := &Mutator{Demand: computeDemand{}, Stamp: testStamper(t)}
	resp := m.Handle(t.Context(), review(t, admissionv1.Update, testpod.New("p").NS("ml").App("c", testpod.GPU(1)).Build(), false))
	if resp.Allowed || resp.Result.Code != 400 {
		t.Errorf("an UPDATE without its old object: %+v", resp.Result)
	}
}

// capturingReserver allows every review and keeps the requests.
type capturingReserver struct{ got []decision.Request }

func (r *capturingReserver) Admit(_ context.Context, _ types.UID, req decision.Request) (decision.Result, error) {
	r.got = append(r.got, req)
	return decision.Result{Allowed: true}, nil
}

// TestValidatorChargesTheVerifiedUser: the decision's per-user check reads
// the user the pod's stamp verifies to, never the name it merely carries,
// nor the review's user when a controller creates it.
func TestValidatorChargesTheVerifiedUser(t *testing.T) {
	s := testStamper(t)
	gpu := func() *testpod.Builder { return testpod.New("p").NS("ml").UID("u").App("c", testpod.GPU(1)) }
	for _, c := range []struct {
		name      string
		pod       *corev1.Pod
		requester string
		want      string
	}{
		{"alice's stamp copied by the controller", withStamp(gpu(), s.Stamp("ml", "alice")).Build(), rsController, "alice"},
		{"a forged name", gpu().Annotate(stamp.UserAnnotation, "alice").Annotate(stamp.SignatureAnnotation, "x").
			Controller("apps/v1", "ReplicaSet", "r").Build(), rsController, rsController},
		{"a stamp from another namespace", withStamp(gpu(), s.Stamp("dev", "alice")).ServiceAccount("sa").Build(), "bob",
			"system:serviceaccount:ml:sa"},
	} {
		r := &capturingReserver{}
		v := &Validator{GPUPods: computeGPUPods{}, Reserver: r, Users: s}
		req := review(t, admissionv1.Create, c.pod, false)
		req.UserInfo.Username = c.requester
		if resp := v.Handle(t.Context(), req); !resp.Allowed {
			t.Fatalf("%s: refused: %+v", c.name, resp.Result)
		}
		if len(r.got) != 1 {
			t.Fatalf("%s: %d decisions", c.name, len(r.got))
		}
		if r.got[0].ChargedUser != c.want {
			t.Errorf("%s: charged to %q, want %q", c.name, r.got[0].ChargedUser, c.want)
		}
	}
}

// computeGPUPods tells GPU pods by the nvidia family's names.
type computeGPUPods struct{}

func (computeGPUPods) Requests(pod *corev1.Pod) bool { return effective.Nvidia().Requests(pod) }
