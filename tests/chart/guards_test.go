package chart_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
)

const (
	guardsNamespace = "gpuadmit-system"
	hamiScheduler   = "system:serviceaccount:kube-system:hami-scheduler"
	hamiPlugin      = "system:serviceaccount:kube-system:hami-device-plugin"
	agentUser       = "system:serviceaccount:" + guardsNamespace + ":gpuadmit-nvml-agent"
	podGuard        = "ValidatingAdmissionPolicy 'gpuadmit-hami-pod-annotations'"
	nodeGuard       = "ValidatingAdmissionPolicy 'gpuadmit-node-device-annotations'"
	podWriters      = ": only " + hamiScheduler + ", " + hamiPlugin + " and members of system:masters may write hami.io/ annotations (gpuadmit's guards.hamiPodAnnotations)"
	devicesWriters  = ": only gpuadmit's NVML agent on that Node (" + agentUser + " with a pod-bound token of that Node) and members of system:masters may"
	hamiNodeWriters = ": only " + hamiPlugin + ", " + hamiScheduler + " and members of system:masters may write hami.io/node-* annotations"
)

// as is a client impersonating user with groups and, when node is not
// empty, the node-name claim of a token bound to a pod on node (as the
// API server puts it in a ServiceAccount's pod-bound token).
func (c *cluster) as(t *testing.T, user string, groups []string, node string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(c.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	if node != "" {
		cfg.Impersonate.Extra = map[string][]string{"authentication.kubernetes.io/node-name": {node}}
	}
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func serviceAccountGroups(namespace string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace}
}

// annotations is a merge patch setting annotations (removing those whose
// value is nil).
func annotations(kv map[string]*string) []byte {
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": kv}})
	if err != nil {
		panic(err)
	}
	return b
}

// TestAnnotationGuards installs the chart with guards.hamiPodAnnotations and
// guards.nodeDeviceAnnotations on and acts, through impersonation, as a
// namespace user with the edit ClusterRole's rules, the kubelet, gpuadmit's NVML
// agent (with the node-name claim of a pod-bound token), HAMi's scheduler and
// device plugin and an administrator: each is granted by RBAC what it needs
// to patch at all, so that every refusal observed is the policies' own, with
// their messages. The agent's own policy (agent.admissionPolicy) is off here:
// it also refuses the agent's writes to other Nodes, and the denial checked is
// the guard's.
func TestAnnotationGuards(t *testing.T) {
	c := startCluster(t)
	ctx := context.Background()
	out := c.helm(t, "install", "gpuadmit", chartDir, "-n", guardsNamespace, "--create-namespace",
		"--set", "guards.hamiPodAnnotations.enabled=true", "--set", "guards.nodeDeviceAnnotations.enabled=true",
		"--set", "agent.admissionPolicy=false")
	for _, want := range []string{"gpuadmit-hami-pod-annotations: only " + hamiScheduler, "gpuadmit-node-device-annotations: gpuadmit.io/gpu-devices only from"} {
		if !strings.Contains(out, want) {
			t.Errorf("NOTES.txt does not say %q:\n%s", want, out)
		}
	}

	// RBAC: alice edits namespace team-a, with the rules the edit ClusterRole
	// aggregates (system:aggregate-to-edit: kube-controller-manager, which
	// fills edit itself, does not run here), and may patch pods/status, which
	// edit does not grant: the guard must hold there too. The kubelets,
	// HAMi's ServiceAccounts and the agent (bound by the chart) may patch.
	const team = "team-a"
	admin := c.kube
	mustCreate := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: team}}, metav1.CreateOptions{})
	mustCreate(err)
	user := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
	}
	_, err = admin.RbacV1().RoleBindings(team).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-edit"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:aggregate-to-edit"}, Subjects: []rbacv1.Subject{user("alice")}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "guards-test-patcher"},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"nodes", "nodes/status", "pods", "pods/status"}, Verbs: []string{"get", "patch"}},
			{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"create"}},
		}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "guards-test-patcher"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "guards-test-patcher"},
		Subjects: []rbacv1.Subject{user("system:node:n1"), user("system:node:n3"),
			{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "hami-scheduler"},
			{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: "hami-device-plugin"}}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = admin.RbacV1().Roles(team).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "pod-status-patcher"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods/status"}, Verbs: []string{"patch"}}}}, metav1.CreateOptions{})
	mustCreate(err)
	_, err = admin.RbacV1().RoleBindings(team).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-pod-status"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-status-patcher"}, Subjects: []rbacv1.Subject{user("alice")}}, metav1.CreateOptions{})
	mustCreate(err)

	// A pod HAMi scheduled (no managed resource: gpuadmit's webhooks, not
	// running here, are not consulted) and two GPU nodes, written by the
	// administrator.
	pod := func(name string, annos map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: team, Annotations: annos},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
	}
	_, err = admin.CoreV1().Pods(team).Create(ctx, pod("p", map[string]string{
		"hami.io/vgpu-devices-allocated": "GPU-1,NVIDIA,81920,100:;", "hami.io/bind-phase": "allocating", "hami.io/vgpu-node": "n1"}), metav1.CreateOptions{})
	mustCreate(err)
	for _, n := range []string{"n1", "n2"} {
		_, err = admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n, Annotations: map[string]string{
			"gpuadmit.io/gpu-devices":      `[{"uuid":"GPU-1","memoryMiB":81920,"cores":100,"healthy":true}]`,
			"hami.io/node-nvidia-register": "GPU-1,10,81920,100,NVIDIA-H100,0,true:", "hami.io/node-handshake": "Reported"}}}, metav1.CreateOptions{})
		mustCreate(err)
	}

	alice := c.as(t, "alice", nil, "")
	kubelet1 := c.as(t, "system:node:n1", []string{"system:nodes"}, "")
	kubelet3 := c.as(t, "system:node:n3", []string{"system:nodes"}, "")
	agent1 := c.as(t, agentUser, serviceAccountGroups(guardsNamespace), "n1")
	agent2 := c.as(t, agentUser, serviceAccountGroups(guardsNamespace), "n2")
	agentUnbound := c.as(t, agentUser, serviceAccountGroups(guardsNamespace), "")
	scheduler := c.as(t, hamiScheduler, serviceAccountGroups("kube-system"), "")
	plugin := c.as(t, hamiPlugin, serviceAccountGroups("kube-system"), "")

	patchPod := func(k kubernetes.Interface, patch []byte, opts metav1.PatchOptions, sub ...string) error {
		_, err := k.CoreV1().Pods(team).Patch(ctx, "p", types.MergePatchType, patch, opts, sub...)
		return err
	}
	patchNode := func(k kubernetes.Interface, node string, patch []byte, opts metav1.PatchOptions, sub ...string) error {
		_, err := k.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, patch, opts, sub...)
		return err
	}

	// Enforcement starts once the API server loaded the policies (and RBAC
	// once its caches saw the bindings): probe with dry-run patches
	// (authorization and admission run, nothing is stored) until each
	// policy itself refuses.
	dryRun := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	for _, probe := range []struct {
		policy string
		do     func() error
	}{
		{podGuard, func() error {
			return patchPod(alice, annotations(map[string]*string{"hami.io/vgpu-devices-allocated": ptr.To("")}), dryRun)
		}},
		{nodeGuard, func() error {
			return patchNode(kubelet1, "n1", annotations(map[string]*string{"gpuadmit.io/gpu-devices": ptr.To("[]")}), dryRun)
		}},
	} {
		deadline := time.Now().Add(30 * time.Second)
		for {
			err := probe.do()
			if apierrors.IsForbidden(err) && strings.Contains(err.Error(), probe.policy) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not enforced after 30s (last dry-run patch: %v)", probe.policy, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}

	const forged = "GPU-1,NVIDIA,1,1:;"
	none := metav1.PatchOptions{}
	for _, tc := range []struct {
		name    string
		do      func() error
		policy  string // empty: allowed; else the policy that refuses,
		wantErr string // with this in its message
	}{
		// Pods.
		{name: "edit user rewrites hami.io/vgpu-devices-allocated", do: func() error {
			return patchPod(alice, annotations(map[string]*string{"hami.io/vgpu-devices-allocated": ptr.To(forged)}), none)
		}, policy: podGuard, wantErr: "alice may not change the annotation hami.io/vgpu-devices-allocated of pod team-a/p" + podWriters},
		{name: "edit user removes hami.io/bind-phase", do: func() error {
			return patchPod(alice, annotations(map[string]*string{"hami.io/bind-phase": nil}), none)
		}, policy: podGuard, wantErr: "alice may not change the annotation hami.io/bind-phase of pod team-a/p" + podWriters},
		{name: "edit user adds hami.io/vgpu-devices-to-allocate", do: func() error {
			return patchPod(alice, annotations(map[string]*string{"hami.io/vgpu-devices-to-allocate": ptr.To(forged)}), none)
		}, policy: podGuard, wantErr: "alice may not change the annotation hami.io/vgpu-devices-to-allocate of pod team-a/p"},
		{name: "edit user rewrites hami.io/vgpu-node through pods/status", do: func() error {
			return patchPod(alice, annotations(map[string]*string{"hami.io/vgpu-node": ptr.To("n2")}), none, "status")
		}, policy: podGuard, wantErr: "alice may not change the annotation hami.io/vgpu-node of pod team-a/p"},
		{name: "edit user changes another annotation", do: func() error {
			return patchPod(alice, annotations(map[string]*string{"team.example/owner": ptr.To("alice")}), none)
		}},
		{name: "edit user creates a pod carrying an assignment", do: func() error {
			_, err := alice.CoreV1().Pods(team).Create(ctx, pod("forged", map[string]string{"hami.io/vgpu-devices-allocated": forged}), metav1.CreateOptions{})
			return err
		}, policy: podGuard, wantErr: "alice may not create pod team-a/forged with the annotation hami.io/vgpu-devices-allocated (HAMi writes it once it schedules the pod)" + podWriters},
		{name: "edit user creates a pod with HAMi's scheduling policy", do: func() error {
			_, err := alice.CoreV1().Pods(team).Create(ctx, pod("binpack", map[string]string{"hami.io/gpu-scheduler-policy": "binpack"}), metav1.CreateOptions{})
			return err
		}},
		{name: "HAMi's scheduler writes the assignment", do: func() error {
			return patchPod(scheduler, annotations(map[string]*string{"hami.io/vgpu-devices-allocated": ptr.To("GPU-1,NVIDIA,40960,50:;"),
				"hami.io/vgpu-devices-to-allocate": ptr.To("GPU-1,NVIDIA,40960,50:;")}), none)
		}},
		{name: "HAMi's device plugin ends the bind phase", do: func() error {
			return patchPod(plugin, annotations(map[string]*string{"hami.io/bind-phase": ptr.To("success"), "hami.io/vgpu-devices-to-allocate": ptr.To(";")}), none)
		}},
		{name: "an administrator edits the assignment", do: func() error {
			return patchPod(admin, annotations(map[string]*string{"hami.io/vgpu-time": ptr.To("1")}), none)
		}},

		// Nodes.
		{name: "kubelet rewrites its Node's gpuadmit.io/gpu-devices", do: func() error {
			return patchNode(kubelet1, "n1", annotations(map[string]*string{"gpuadmit.io/gpu-devices": ptr.To("[]")}), none)
		}, policy: nodeGuard, wantErr: "system:node:n1 may not change the annotation gpuadmit.io/gpu-devices of Node n1" + devicesWriters},
		{name: "kubelet removes it through nodes/status", do: func() error {
			return patchNode(kubelet1, "n1", annotations(map[string]*string{"gpuadmit.io/gpu-devices": nil}), none, "status")
		}, policy: nodeGuard, wantErr: "system:node:n1 may not change the annotation gpuadmit.io/gpu-devices of Node n1"},
		{name: "kubelet rewrites HAMi's register", do: func() error {
			return patchNode(kubelet1, "n1", annotations(map[string]*string{"hami.io/node-nvidia-register": ptr.To("GPU-1,10,1,100,NVIDIA-H100,0,true:")}), none)
		}, policy: nodeGuard, wantErr: "system:node:n1 may not change the annotation hami.io/node-nvidia-register of Node n1" + hamiNodeWriters},
		{name: "kubelet updates its labels, other annotations and status", do: func() error {
			if err := patchNode(kubelet1, "n1", []byte(`{"metadata":{"labels":{"topology.kubernetes.io/zone":"z1"},"annotations":{"node.alpha.kubernetes.io/ttl":"0"}}}`), none); err != nil {
				return err
			}
			return patchNode(kubelet1, "n1", []byte(`{"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`), none, "status")
		}},
		{name: "kubelet registers its Node carrying gpuadmit.io/gpu-devices", do: func() error {
			_, err := kubelet3.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3",
				Annotations: map[string]string{"gpuadmit.io/gpu-devices": "[]"}}}, metav1.CreateOptions{})
			return err
		}, policy: nodeGuard, wantErr: "system:node:n3 may not change the annotation gpuadmit.io/gpu-devices of Node n3"},
		{name: "kubelet registers its Node", do: func() error {
			_, err := kubelet3.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n3"}}, metav1.CreateOptions{})
			return err
		}},
		{name: "the agent on n1 writes n1", do: func() error {
			return patchNode(agent1, "n1", annotations(map[string]*string{"gpuadmit.io/gpu-devices": ptr.To("[]")}), none)
		}},
		{name: "the agent on n2 writes n1", do: func() error {
			return patchNode(agent2, "n1", annotations(map[string]*string{"gpuadmit.io/gpu-devices": ptr.To(`[{"uuid":"GPU-9"}]`)}), none)
		}, policy: nodeGuard, wantErr: agentUser + " may not change the annotation gpuadmit.io/gpu-devices of Node n1" + devicesWriters},
		{name: "the agent without a pod-bound token writes n1", do: func() error {
			return patchNode(agentUnbound, "n1", annotations(map[string]*string{"gpuadmit.io/gpu-devices": ptr.To(`[{"uuid":"GPU-9"}]`)}), none)
		}, policy: nodeGuard, wantErr: agentUser + " may not change the annotation gpuadmit.io/gpu-devices of Node n1"},
		{name: "the agent on n1 writes HAMi's register", do: func() error {
			return patchNode(agent1, "n1", annotations(map[string]*string{"hami.io/node-nvidia-register": nil}), none)
		}, policy: nodeGuard, wantErr: agentUser + " may not change the annotation hami.io/node-nvidia-register of Node n1"},
		{name: "HAMi's device plugin registers and answers the handshake", do: func() error {
			return patchNode(plugin, "n1", annotations(map[string]*string{"hami.io/node-nvidia-register": ptr.To("GPU-1,10,81920,100,NVIDIA-H100,0,true:"),
				"hami.io/node-handshake": ptr.To("Reported 2026-01-01 00:00:00")}), none)
		}},
		{name: "HAMi's scheduler requests the handshake", do: func() error {
			return patchNode(scheduler, "n1", annotations(map[string]*string{"hami.io/node-handshake": ptr.To("Requesting_2026-01-01 00:01:00")}), none)
		}},
		{name: "HAMi's device plugin writes gpuadmit.io/gpu-devices", do: func() error {
			return patchNode(plugin, "n1", annotations(map[string]*string{"gpuadmit.io/gpu-devices": nil}), none)
		}, policy: nodeGuard, wantErr: hamiPlugin + " may not change the annotation gpuadmit.io/gpu-devices of Node n1"},
		{name: "an administrator writes both", do: func() error {
			return patchNode(admin, "n2", annotations(map[string]*string{"gpuadmit.io/gpu-devices": ptr.To("[]"), "hami.io/node-nvidia-register": nil}), none)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if tc.policy == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want Forbidden by the policy", err)
			}
			if !strings.Contains(err.Error(), tc.policy+" with binding") || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v\nwant %s to refuse it with %q", err, tc.policy, tc.wantErr)
			}
		})
	}

	t.Run("what the allowed writers wrote is what is stored", func(t *testing.T) {
		p, err := admin.CoreV1().Pods(team).Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Annotations["hami.io/vgpu-devices-allocated"]; got != "GPU-1,NVIDIA,40960,50:;" || p.Annotations["hami.io/bind-phase"] != "success" ||
			p.Annotations["hami.io/vgpu-node"] != "n1" {
			t.Errorf("pod p's annotations: %v", p.Annotations)
		}
		n1, err := admin.CoreV1().Nodes().Get(ctx, "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := n1.Annotations["gpuadmit.io/gpu-devices"]; got != "[]" || !strings.HasPrefix(n1.Annotations["hami.io/node-handshake"], "Requesting_") ||
			n1.Labels["topology.kubernetes.io/zone"] != "z1" {
			t.Errorf("node n1: annotations %v, labels %v", n1.Annotations, n1.Labels)
		}
	})

	// The type check kube-controller-manager (not running here) writes into
	// a policy's status, against the API server's own schemas: a misspelt
	// field or a wrong type would make an expression fail at run time, and
	// with failurePolicy Fail refuse every pod or Node update.
	t.Run("the policies type-check against the API server's schemas", func(t *testing.T) {
		checker := &validating.TypeChecker{SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: c.disco},
			RestMapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.disco))}
		for _, name := range []string{"gpuadmit-hami-pod-annotations", "gpuadmit-node-device-annotations"} {
			p, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range checker.Check(p) {
				t.Errorf("%s: %s: %s", name, w.FieldRef, w.Warning)
			}
			// The checker sees the schemas: a misspelt field is reported.
			broken := p.DeepCopy()
			broken.Spec.Validations[0].Expression = "has(object.metadata.annotationz)"
			if w := checker.Check(broken); len(w) == 0 || !strings.Contains(w[0].Warning, "annotationz") {
				t.Errorf("%s: the type check does not report a misspelt field: %v", name, w)
			}
		}
	})

	c.helm(t, "uninstall", "gpuadmit", "-n", guardsNamespace, "--wait")
	if left := c.leftovers(t); !slices.Equal(left, keptCRDs) {
		t.Errorf("helm uninstall left %v, want only the CRDs (crds.keep)", left)
	}
}
