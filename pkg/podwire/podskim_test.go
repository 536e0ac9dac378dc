package podwire

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// skimCodecs is the pod client's codec factory for fams.
func skimCodecs(fams []effective.Family) podCodecs {
	return podCodecs{base: scheme.Codecs.WithoutConversion(), skim: newPodSkimmer(fams)}
}

// protobufInfo is the protobuf SerializerInfo of c.
func protobufInfo(t testing.TB, c runtime.NegotiatedSerializer) runtime.SerializerInfo {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(c.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	return info
}

// encodePB is obj as the API server sends it in protobuf.
func encodePB(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := scheme.Codecs.WithoutConversion().EncoderForVersion(protobufInfo(t, scheme.Codecs.WithoutConversion()).Serializer, corev1.SchemeGroupVersion)
	if err := enc.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// skimPods are pods with every part PodTransform reads, and much it does
// not.
func skimPods() map[string]*corev1.Pod {
	full := testpod.New("full").NS("team-a").
		Init("init", gpu(1), mem(2048)).App("app", gpu(2), mem(4096), cores(30)).App("sidecar").
		Node("node1").Devices("GPU-0,NVIDIA,2048,30:;GPU-1,NVIDIA,4096,30:;").Build()
	full.UID, full.ResourceVersion, full.Labels = "uid-full", "42", map[string]string{"app": "x"}
	full.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
	full.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kcm", Operation: metav1.ManagedFieldsOperationUpdate,
		FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}
	full.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	full.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "b"}}
	full.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"cpu": resource.MustParse("500m"), "nvidia.com/gpu": resource.MustParse("2")}
	full.Spec.NodeSelector = map[string]string{"gpu": "a100"}
	full.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}}}},
		PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{Weight: 1,
			PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "zone", Namespaces: []string{"other"}}}}}}
	full.Spec.PriorityClassName, full.Spec.ActiveDeadlineSeconds = "high", ptr.To[int64](600) // ResourceQuota scopes
	full.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("tpl")}}
	full.Status = corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSBurstable, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", Image: "i", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "x"}}}, {Name: "sidecar"}}}
	plain := testpod.New("plain").NS("team-b").App("app").Node("node2").Build()
	plain.Spec.Containers[0].Resources.Requests = corev1.ResourceList{"cpu": resource.MustParse("1"), "memory": resource.MustParse("1Gi")}
	claimOnly := testpod.New("claims").NS("team-b").App("app").Build()
	claimOnly.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "c", ResourceClaimTemplateName: ptr.To("t")}}
	claimOnly.Status.Phase = corev1.PodPending
	pct := testpod.New("pct").NS("team-c").App("app", gpu(1), testpod.MemPct(50)).Build()
	pct.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
		{TopologyKey: "zone"}}}} // same namespace only: not kept
	pct.Spec.ActiveDeadlineSeconds = ptr.To[int64](0)
	return map[string]*corev1.Pod{"full": full, "plain": plain, "claims": claimOnly, "percent": pct, "empty": {}}
}

// TestPodSkimMatchesTransform: for every pod and every family set, the
// pod client's decoding is PodTransform of the pod decoded whole, and so is
// PodTransform of the pod skimmed into a Pod.
func TestPodSkimMatchesTransform(t *testing.T) {
	families := map[string][]effective.Family{
		"nvidia":  {effective.Nvidia()},
		"default": config.Families(config.Default()),
	}
	for fname, fams := range families {
		for name, p := range skimPods() {
			t.Run(fname+"/"+name, func(t *testing.T) {
				if _, err := checkSkim(t, fams, encodePB(t, p)); err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// checkSkim decodes the protobuf pod data with the pod client's decoder
// for fams, into nil (slimmed) and into a Pod (skimmed), and checks both
// against the pod decoded whole: the first is PodTransform of it (but for
// a PartialObjectMetadata's TypeMeta, which the client's decoder clears),
// PodTransform of the second is. It returns the slimmed pod.
func checkSkim(t *testing.T, fams []effective.Family, data []byte) (runtime.Object, error) {
	t.Helper()
	codecs := skimCodecs(fams)
	skim := codecs.DecoderToVersion(protobufInfo(t, codecs).Serializer, corev1.SchemeGroupVersion)
	want, err := runtime.Decode(scheme.Codecs.UniversalDeserializer(), data)
	if err != nil {
		return nil, err
	}
	tr := PodTransform(fams)
	wantSlim, err := tr(want)
	if err != nil {
		return nil, err
	}
	got, err := runtime.Decode(skim, data)
	if err != nil {
		return nil, err
	}
	if !apiequality.Semantic.DeepEqual(withoutKind(got), withoutKind(wantSlim)) {
		t.Errorf("slimmed by the decoder:\n%#v\nwant (decoded whole, then slimmed):\n%#v", got, wantSlim)
	}
	skimmed, _, err := skim.Decode(data, nil, &corev1.Pod{Spec: corev1.PodSpec{Hostname: "stale"}})
	if err != nil {
		return nil, err
	}
	if p := skimmed.(*corev1.Pod); p.ManagedFields != nil || p.Labels != nil || p.Spec.Hostname != "" {
		t.Error("not skimmed")
	}
	if gotSlim, err := tr(skimmed); err != nil || !apiequality.Semantic.DeepEqual(gotSlim, wantSlim) {
		t.Errorf("skimmed then slimmed (%v):\n%#v\nwant (decoded whole):\n%#v", err, gotSlim, wantSlim)
	}
	return got, nil
}

// withoutKind is obj with a PartialObjectMetadata's TypeMeta cleared (the
// client's decoder clears it on a watched object, not on a listed one;
// nothing reads it).
func withoutKind(obj any) any {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		c := *m
		c.TypeMeta = metav1.TypeMeta{}
		return &c
	}
	return obj
}

// TestPodSerializer: a PodList is skimmed item by item with its ListMeta
// (into a List: slimmed);
// a pod decoded into a *corev1.Pod is reset first; any other object, and a
// pod into another type, is decoded whole.
func TestPodSerializer(t *testing.T) {
	fams := []effective.Family{effective.Nvidia()}
	ser := protobufInfo(t, skimCodecs(fams)).Serializer
	pods := skimPods()
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "7", Continue: "next"},
		Items: []corev1.Pod{*pods["full"], *pods["plain"]}}
	status := &metav1.Status{Status: metav1.StatusFailure, Message: "gone", Code: 410}
	for _, tc := range []struct {
		name  string
		obj   runtime.Object
		into  runtime.Object
		check func(t *testing.T, got runtime.Object)
	}{
		{"list", list, &corev1.PodList{Items: []corev1.Pod{{}}}, func(t *testing.T, got runtime.Object) {
			l := got.(*corev1.PodList)
			if l.ResourceVersion != "7" || l.Continue != "next" || len(l.Items) != 2 || l.Items[0].Name != "full" || l.Items[1].Name != "plain" {
				t.Errorf("list: %+v", l.ListMeta)
			}
			if len(l.Items[0].ManagedFields) != 0 || l.Items[0].Spec.Containers[0].Env != nil || l.Items[0].Labels != nil {
				t.Error("list items not skimmed")
			}
		}},
		{"list into a List", list, &metav1.List{Items: []runtime.RawExtension{{}}}, func(t *testing.T, got runtime.Object) {
			l := got.(*metav1.List)
			if l.ResourceVersion != "7" || l.Continue != "next" || len(l.Items) != 2 {
				t.Fatalf("list: %+v, %d items", l.ListMeta, len(l.Items))
			}
			if p, ok := l.Items[0].Object.(*corev1.Pod); !ok || p.Name != "full" || p.Spec.Containers[0].Env != nil {
				t.Errorf("GPU pod not slimmed: %#v", l.Items[0].Object)
			}
			if m, ok := l.Items[1].Object.(*metav1.PartialObjectMetadata); !ok || m.Name != "plain" {
				t.Errorf("plain pod not its metadata: %#v", l.Items[1].Object)
			}
		}},
		{"pod into a pod", pods["full"], &corev1.Pod{Spec: corev1.PodSpec{Hostname: "stale"}}, func(t *testing.T, got runtime.Object) {
			p := got.(*corev1.Pod)
			if p.Name != "full" || p.Spec.Hostname != "" || p.ManagedFields != nil {
				t.Errorf("pod: %+v", p.ObjectMeta)
			}
		}},
		{"status", status, nil, func(t *testing.T, got runtime.Object) {
			if s, ok := got.(*metav1.Status); !ok || s.Code != 410 || s.Message != "gone" {
				t.Errorf("status: %#v", got)
			}
		}},
		{"pod into another type", pods["full"], &corev1.Node{}, func(t *testing.T, got runtime.Object) {
			if p, ok := got.(*corev1.Pod); !ok || len(p.ManagedFields) != 1 {
				t.Errorf("not decoded whole, as the protobuf serializer does: %#v", got)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := ser.Decode(encodePB(t, tc.obj), nil, tc.into)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, got)
		})
	}
}
