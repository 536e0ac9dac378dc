package admission

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	jsonpatchapply "github.com/evanphx/json-patch/v5"
	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/stamp"
	"github.com/gpuadmit/gpuadmit/pkg/workload"
)

// tmplJSON is a GPU pod template carrying annotations (nil: none) and
// the container image.
func tmplJSON(annotations map[string]string, image string) string {
	meta := ""
	if annotations != nil {
		b, _ := json.Marshal(annotations)
		meta = fmt.Sprintf(`"metadata":{"annotations":%s},`, b)
	}
	return fmt.Sprintf(`{%s"spec":{"containers":[{"name":"c","image":%q,"resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}`, meta, image)
}

// workloadObject is a workload of kind whose templates are tmpl.
func workloadObject(kind, tmpl string) []byte {
	var spec string
	switch kind {
	case "CronJob":
		spec = `{"schedule":"* * * * *","jobTemplate":{"spec":{"template":` + tmpl + `}}}`
	case "RayCluster":
		spec = `{"headGroupSpec":{"template":` + tmpl + `},"workerGroupSpecs":[{"replicas":1,"template":` + tmpl + `}]}`
	case "RayJob":
		spec = `{"rayClusterSpec":{"headGroupSpec":{"template":` + tmpl + `}},"submitterPodTemplate":` + tmpl + `}`
	case "PyTorchJob":
		spec = `{"pytorchReplicaSpecs":{"Master":{"replicas":1,"template":` + tmpl + `},"Worker":{"replicas":3,"template":` + tmpl + `}}}`
	default:
		spec = `{"replicas":2,"template":` + tmpl + `}`
	}
	return fmt.Appendf(nil, `{"metadata":{"name":"w","namespace":"ml"},"spec":%s}`, spec)
}

var kindGVK = map[string]metav1.GroupVersionKind{
	"Deployment": {Group: "apps", Version: "v1", Kind: "Deployment"}, "ReplicaSet": {Group: "apps", Version: "v1", Kind: "ReplicaSet"},
	"StatefulSet": {Group: "apps", Version: "v1", Kind: "StatefulSet"}, "DaemonSet": {Group: "apps", Version: "v1", Kind: "DaemonSet"},
	"Job": {Group: "batch", Version: "v1", Kind: "Job"}, "CronJob": {Group: "batch", Version: "v1", Kind: "CronJob"},
	"PyTorchJob":            {Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"},
	"ReplicationController": {Group: "", Version: "v1", Kind: "ReplicationController"},
	"RayCluster":            {Group: "ray.io", Version: "v1", Kind: "RayCluster"},
	"RayJob":                {Group: "ray.io", Version: "v1", Kind: "RayJob"},
}

// ownedBy is obj with a controller ownerReference to an object of
// apiVersion and kind ("": obj unchanged).
func ownedBy(t *testing.T, obj []byte, apiVersion, kind string) []byte {
	t.Helper()
	if kind == "" {
		return obj
	}
	var o map[string]any
	if err := json.Unmarshal(obj, &o); err != nil {
		t.Fatal(err)
	}
	o["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{"apiVersion": apiVersion, "kind": kind,
		"name": "o", "uid": "o", "controller": true}}
	out, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stampedUsers runs the stamper on the review and returns the users each
// template of the result verifies to ("" : none verifies).
func stampedUsers(t *testing.T, w *WorkloadStamper, req admission.Request) []string {
	t.Helper()
	resp := w.Handle(t.Context(), req)
	if !resp.Allowed {
		t.Fatalf("refused: %+v", resp.Result)
	}
	out := req.Object.Raw
	if len(resp.Patches) > 0 {
		ops, _ := json.Marshal(resp.Patches)
		p, err := jsonpatchapply.DecodePatch(ops)
		if err != nil {
			t.Fatal(err)
		}
		if out, err = p.Apply(out); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := workload.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	k := w.stampedKind(req.Kind)
	if k == nil {
		t.Fatalf("%s is no kind whose templates are stamped", req.Kind)
	}
	var users []string
	s := w.Stamp.(*stamp.Stamper)
	for _, tm := range k.TemplateObjects(obj) {
		user, _ := s.Verified("ml", templateAnnotations(tm.Template))
		users = append(users, user)
	}
	return users
}

func workloadStamper(t *testing.T) *WorkloadStamper {
	t.Helper()
	kinds, err := config.WorkloadKinds(config.Default())
	if err != nil {
		t.Fatal(err)
	}
	return &WorkloadStamper{Kinds: kinds, Stamp: testStamper(t)}
}

// configuredStamper is a workload stamper whose Stamper trusts every
// configured kind's pod creator, as the server builds it.
func configuredStamper(t *testing.T) *WorkloadStamper {
	t.Helper()
	w := workloadStamper(t)
	var creators []stamp.Creator
	w.Kinds.Each(func(k *workload.Kind) {
		if k.PodCreator.Username != "" {
			creators = append(creators, stamp.Creator{Group: k.Group, Kind: k.Kind, Username: k.PodCreator.Username})
		}
	})
	s, err := stamp.New(bytes.Repeat([]byte{3}, stamp.MinKeyBytes), creators)
	if err != nil {
		t.Fatal(err)
	}
	w.Stamp = s
	return w
}

func stampReview(op admissionv1.Operation, kind, requester string, obj, old []byte) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "r", Operation: op, Namespace: "ml", Name: "w",
		Kind: kindGVK[kind], UserInfo: authUser(requester), Object: runtime.RawExtension{Raw: obj}, OldObject: runtime.RawExtension{Raw: old}}}
}

// TestWorkloadStamperOverwritesUsers attacks the template stamp at
// CREATE: whatever a user writes in a template (another user's name, a
// valid stamp copied from elsewhere, a pre-install hand-written stamp),
// every template of every kind ends stamped with the requester; only a
// trusted controller copying a valid stamp keeps it.
func TestWorkloadStamperOverwritesUsers(t *testing.T) {
	w := workloadStamper(t)
	s := testStamper(t)
	alice := s.Stamp("ml", "alice")
	forged := map[string]string{stamp.UserAnnotation: "alice", stamp.SignatureAnnotation: "handwritten"}
	const deploy, cron, kuberay = "system:serviceaccount:kube-system:deployment-controller",
		"system:serviceaccount:kube-system:cronjob-controller", "system:serviceaccount:ray-system:kuberay-operator"
	for _, c := range []struct {
		name, kind, requester string
		owner                 [2]string // the object's controller: apiVersion, kind
		annotations           map[string]string
		nonGPU                bool // a template asking for no GPU (one may be added at pod CREATE)
		templates             int  // how many templates the object has (0: not checked)
		want                  string
	}{
		{name: "bob's Deployment naming alice", kind: "Deployment", requester: "bob", annotations: forged, want: "bob"},
		{name: "bob's Deployment with alice's copied stamp", kind: "Deployment", requester: "bob", annotations: alice, want: "bob"},
		{name: "bob's Deployment with another namespace's stamp", kind: "Deployment", requester: "bob", annotations: s.Stamp("dev", "alice"), want: "bob"},
		{name: "an unstamped Deployment", kind: "Deployment", requester: "bob", want: "bob"},
		{name: "a Deployment without GPUs carrying alice's stamp", kind: "Deployment", requester: "bob", annotations: alice, nonGPU: true, want: "bob"},
		{name: "a StatefulSet", kind: "StatefulSet", requester: "bob", annotations: alice, want: "bob"},
		{name: "a DaemonSet", kind: "DaemonSet", requester: "bob", annotations: alice, want: "bob"},
		{name: "a ReplicationController", kind: "ReplicationController", requester: "bob", annotations: alice, want: "bob"},
		{name: "a Job", kind: "Job", requester: "bob", annotations: forged, want: "bob"},
		{name: "a CronJob's job template", kind: "CronJob", requester: "bob", annotations: alice, want: "bob"},
		{name: "every template of a configured kind", kind: "PyTorchJob", requester: "bob", annotations: alice, want: "bob"},
		{name: "a RayJob's submitter template too", kind: "RayJob", requester: "bob", annotations: alice, templates: 2, want: "bob"},
		{name: "the deployment controller copies alice's stamp", kind: "ReplicaSet", requester: deploy,
			owner: [2]string{"apps/v1", "Deployment"}, annotations: alice, want: "alice"},
		{name: "the cronjob controller copies alice's stamp", kind: "Job", requester: cron,
			owner: [2]string{"batch/v1", "CronJob"}, annotations: alice, want: "alice"},
		{name: "KubeRay copies a RayJob's stamp", kind: "RayCluster", requester: kuberay,
			owner: [2]string{"ray.io/v1", "RayJob"}, annotations: alice, want: "alice"},
		{name: "KubeRay copies a RayService's template (a kind gpuadmit does not stamp)", kind: "RayCluster", requester: kuberay,
			owner: [2]string{"ray.io/v1", "RayService"}, annotations: alice, want: kuberay},
		{name: "a trusted creator's object with no controller", kind: "ReplicaSet", requester: deploy, annotations: alice, want: deploy},
		{name: "a controller copies a forged stamp", kind: "ReplicaSet", requester: deploy,
			owner: [2]string{"apps/v1", "Deployment"}, annotations: forged, want: deploy},
		{name: "posing as the deployment controller", kind: "ReplicaSet", requester: "system:serviceaccount:ml:deployment-controller",
			owner: [2]string{"apps/v1", "Deployment"}, annotations: alice, want: "system:serviceaccount:ml:deployment-controller"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := w
			if c.kind == "RayCluster" || c.kind == "RayJob" {
				w = configuredStamper(t) // same key: alice's stamp verifies
			}
			tmpl := tmplJSON(c.annotations, "x")
			if c.nonGPU {
				tmpl = strings.ReplaceAll(tmpl, `"nvidia.com/gpu":"1"`, `"cpu":"1"`)
			}
			obj := ownedBy(t, workloadObject(c.kind, tmpl), c.owner[0], c.owner[1])
			users := stampedUsers(t, w, stampReview(admissionv1.Create, c.kind, c.requester, obj, nil))
			if c.templates != 0 && len(users) != c.templates {
				t.Errorf("%d templates stamped, want %d", len(users), c.templates)
			}
			if len(users) == 0 {
				t.Fatal("no template found")
			}
			for i, u := range users {
				if u != c.want {
					t.Errorf("template %d charged to %q, want %q", i, u, c.want)
				}
			}
		})
	}
}

// TestWorkloadStamperUpdate: a change of the template stamps its author;
// anything else (a label, the replicas, a controller's annotation, an
// edit of the stamp alone) keeps the template's stamp as it was, so that
// nobody moves another's pods to a user, and no rollout follows.
func TestWorkloadStamperUpdate(t *testing.T) {
	w := workloadStamper(t)
	s := testStamper(t)
	alice, bob := s.Stamp("ml", "alice"), s.Stamp("ml", "bob")
	handwritten := map[string]string{stamp.UserAnnotation: "alice", stamp.SignatureAnnotation: "handwritten"}
	for _, c := range []struct {
		name      string
		old, obj  string
		requester string
		want      string
		wantPatch bool // no patch: the template is exactly as it was
	}{
		{"bob changes alice's template", tmplJSON(alice, "x"), tmplJSON(alice, "y"), "bob", "bob", true},
		{"bob rewrites only the stamp to his own", tmplJSON(alice, "x"), tmplJSON(bob, "x"), "bob", "alice", true},
		{"bob removes the stamp", tmplJSON(alice, "x"), tmplJSON(nil, "x"), "bob", "alice", true},
		{"the garbage collector touches the object", tmplJSON(alice, "x"), tmplJSON(alice, "x"),
			"system:serviceaccount:kube-system:generic-garbage-collector", "alice", false},
		{"a pre-install template stays unstamped", tmplJSON(nil, "x"), tmplJSON(nil, "x"), "bob", "", false},
		{"a pre-install hand-written stamp is kept as it was, unverified", tmplJSON(handwritten, "x"), tmplJSON(handwritten, "x"), "bob", "", false},
		{"a pre-install template changed", tmplJSON(handwritten, "x"), tmplJSON(handwritten, "y"), "bob", "bob", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := stampReview(admissionv1.Update, "Deployment", c.requester, workloadObject("Deployment", c.obj), workloadObject("Deployment", c.old))
			if resp := w.Handle(t.Context(), req); (len(resp.Patches) > 0) != c.wantPatch {
				t.Errorf("patch %v, want one: %v", resp.Patches, c.wantPatch)
			}
			users := stampedUsers(t, w, req)
			if len(users) != 1 || users[0] != c.want {
				t.Errorf("charged to %q, want %q", users, c.want)
			}
		})
	}
}

func TestWorkloadStamperLeavesOthersAlone(t *testing.T) {
	w := workloadStamper(t)
	for _, c := range []struct {
		name string
		req  admission.Request
	}{
		{"an unknown kind", func() admission.Request {
			r := stampReview(admissionv1.Create, "Deployment", "bob", workloadObject("Deployment", tmplJSON(nil, "x")), nil)
			r.Kind = metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Thing"}
			return r
		}()},
		{"a scale", func() admission.Request {
			r := stampReview(admissionv1.Update, "Deployment", "bob", scaleJSON(3), scaleJSON(1))
			r.SubResource = "scale"
			return r
		}()},
		{"a delete", stampReview(admissionv1.Delete, "Deployment", "bob", nil, nil)},
	} {
		if resp := w.Handle(t.Context(), c.req); !resp.Allowed || len(resp.Patches) > 0 {
			t.Errorf("%s: %+v %v", c.name, resp.Result, resp.Patches)
		}
	}
	bad := stampReview(admissionv1.Create, "Deployment", "bob", []byte(`[1]`), nil)
	if resp := w.Handle(t.Context(), bad); resp.Allowed || resp.Result.Code != 400 {
		t.Errorf("an unreadable Deployment: %+v", resp.Result)
	}
}

func authUser(name string) authenticationv1.UserInfo {
	return authenticationv1.UserInfo{Username: name}
}
