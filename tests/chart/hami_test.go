package chart_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/gpuadmit/gpuadmit/pkg/config"
)

// TestHAMiDeviceConfigMap: hami.deviceConfigMap names HAMi's ConfigMap in
// any namespace (namespace/name; a plain name is the release namespace's).
// The rendered configuration reads it through devices.hamiConfigMap
// (gpushare beside it) instead of config.devices: with HAMi's rendered
// file there, it governs what gpuadmit reading that file governs. The
// webhook may get that one ConfigMap in that namespace, and no other.
func TestHAMiDeviceConfigMap(t *testing.T) {
	hami, err := os.ReadFile(hamiRendered)
	if err != nil {
		t.Fatal(err)
	}
	bare, _, err := config.Load(hamiRendered)
	if err != nil {
		t.Fatal(err)
	}
	for value, want := range map[string]string{
		"hami-scheduler-device":             "gpuadmit-system/hami-scheduler-device",
		"kube-system/hami-scheduler-device": "kube-system/hami-scheduler-device",
	} {
		t.Run(value, func(t *testing.T) {
			objs := render(t, "--set", "hami.deviceConfigMap="+value, "--set-json", `config.devices.gpushare={"memoryUnit":"GiB"}`)
			ns, name, _ := strings.Cut(want, "/")
			text := nested(t, find(objs, "ConfigMap", "gpuadmit-config"), "data", "config.yaml")
			if !strings.Contains(text, "hamiConfigMap: "+want+"\n") || strings.Contains(text, "nvidia:") {
				t.Fatalf("the configuration does not read %s instead of config.devices:\n%s", want, text)
			}
			cfg, _, err := config.Parse([]byte(text))
			if err != nil {
				t.Fatalf("the rendered configuration is not one the server accepts: %v", err)
			}
			_, err = config.ReadHAMiConfigMap(context.Background(), cfg, "gpuadmit-system", func(_ context.Context, gotNS, gotName string) (map[string]string, error) {
				if gotNS+"/"+gotName != want {
					return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, gotName)
				}
				return map[string]string{"device-config.yaml": string(hami)}, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got, wantFamilies := config.Families(cfg), config.Families(bare)
			if len(got) != len(wantFamilies)+1 || !slices.Equal(got[:len(wantFamilies)], wantFamilies) || got[len(wantFamilies)].Name != "gpushare" {
				t.Errorf("through the ConfigMap, the families\n%+v\nwant HAMi's file's\n%+v\nand gpushare", got, wantFamilies)
			}
			checkHAMiRBAC(t, objs, ns, name)
			pod, c := webhookPod(t, objs)
			if mounts, _, _ := unstructured.NestedSlice(c, "volumeMounts"); len(mounts) != 1 {
				t.Errorf("the webhook mounts %v: HAMi's config is read through the API server, not mounted", mounts)
			}
			if volumes, _, _ := unstructured.NestedSlice(pod, "volumes"); len(volumes) != 1 {
				t.Errorf("the webhook's volumes %v: HAMi's config is read through the API server", volumes)
			}
			if p := nested(t, &unstructured.Unstructured{Object: c}, "terminationMessagePolicy"); p != "FallbackToLogsOnError" {
				t.Errorf("terminationMessagePolicy %s: a replica that cannot read the ConfigMap would not say why in its pod's status", p)
			}
			// helm template cannot read the ConfigMap: the matchConditions
			// name config.devices' resources (TestInstallEveryClusterValues
			// reads it), and no checksum of it is rendered.
			for _, kind := range []string{"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"} {
				for _, names := range matchedNames(t, find(objs, kind, "gpuadmit")) {
					if !slices.Contains(names, "nvidia.com/gpu") || !slices.Contains(names, "aliyun.com/gpu-mem") {
						t.Errorf("%s matchConditions name %v", kind, names)
					}
				}
			}
			d := find(objs, "Deployment", "gpuadmit-webhook")
			if _, ok, _ := unstructured.NestedString(d.Object, "spec", "template", "metadata", "annotations", "checksum/hami-device-config"); ok {
				t.Error("helm template read no HAMi device config, yet its checksum is rendered")
			}
		})
	}
	if objs := render(t); find(objs, "Role", "gpuadmit-webhook-hami-device-config") != nil {
		t.Error("without hami.deviceConfigMap, a Role on HAMi's ConfigMap is rendered")
	}
}

// checkHAMiRBAC: the webhook's ServiceAccount may get, list and watch the
// ConfigMap ns/name, and nothing else through that Role; its own Role
// gains nothing on it.
func checkHAMiRBAC(t *testing.T, objs []*unstructured.Unstructured, ns, name string) {
	t.Helper()
	role := find(objs, "Role", "gpuadmit-webhook-hami-device-config")
	binding := find(objs, "RoleBinding", "gpuadmit-webhook-hami-device-config")
	if role == nil || binding == nil {
		t.Fatalf("no Role and RoleBinding gpuadmit-webhook-hami-device-config: %s", kinds(objs))
	}
	if role.GetNamespace() != ns || binding.GetNamespace() != ns {
		t.Errorf("the Role is in %q, its binding in %q; HAMi's ConfigMap is in %q", role.GetNamespace(), binding.GetNamespace(), ns)
	}
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	want := []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "resourceNames": []any{name},
		"verbs": []any{"get", "list", "watch"}}}
	if !equality.Semantic.DeepEqual(rules, want) {
		t.Errorf("the Role's rules %v, want only %v", rules, want)
	}
	subjects, _, _ := unstructured.NestedSlice(binding.Object, "subjects")
	wantSubjects := []any{map[string]any{"kind": "ServiceAccount", "name": "gpuadmit-webhook", "namespace": "gpuadmit-system"}}
	if !equality.Semantic.DeepEqual(subjects, wantSubjects) || nested(t, binding, "roleRef", "name") != role.GetName() {
		t.Errorf("the RoleBinding binds %v to %s, want %v to %s", subjects, nested(t, binding, "roleRef", "name"), wantSubjects, role.GetName())
	}
	own := find(objs, "Role", "gpuadmit-webhook")
	for _, r := range own.Object["rules"].([]any) {
		if names, _ := r.(map[string]any)["resourceNames"].([]any); slices.Contains(names, any(name)) {
			t.Errorf("the webhook's own Role names %s: %v", name, r)
		}
	}
}
