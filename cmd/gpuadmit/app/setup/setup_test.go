package setup

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/policysource"
	"github.com/gpuadmit/gpuadmit/policy"
)

// factor2 is the webhook's configuration with memoryFactor 2, as the
// chart writes it in the ConfigMap gpuadmit-config.
const factor2 = "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\ndevices:\n  nvidia:\n    memoryFactor: 2\n"

// operatorRule denies every pod of namespace frozen.
const operatorRule = "package gpuadmit.admission\n\ndeny contains \"namespace frozen: GPU pods are frozen\" if input.namespace == \"frozen\"\n"

// configMap is a ConfigMap of namespace ns with labels and data.
func configMap(ns, name string, labels, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Data: data}
}

// gpuadmitConfig is the ConfigMap gpuadmit-config of ns holding text.
func gpuadmitConfig(ns, text string) *corev1.ConfigMap {
	return configMap(ns, "gpuadmit-config", nil, map[string]string{"config.yaml": text})
}

// policyConfigMap is a policy ConfigMap (gpuadmit.io/policy=true) of gpuadmit-system.
func policyConfigMap(name string, modules map[string]string) *corev1.ConfigMap {
	return configMap("gpuadmit-system", name, map[string]string{"gpuadmit.io/policy": "true"}, modules)
}

// refuse makes the fake API server answer verb on configmaps with err.
func refuse(verb string, err error) func(*fake.Clientset) {
	return func(c *fake.Clientset) {
		c.PrependReactor(verb, "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
	}
}

var forbidden = apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "gpuadmit-config", errors.New("no"))

func TestSetup(t *testing.T) {
	gs := "gpuadmit-system"
	tests := []struct {
		name       string
		objects    []runtime.Object
		react      func(*fake.Clientset)
		flags      Flags
		offline    bool
		wantFactor int64
		wantCfg    string // cfgFrom
		wantPol    string // policiesFrom
		wantErrSub string
	}{
		{name: "gpuadmit not installed: the defaults, said so",
			wantCfg: "configuration: the defaults (no ConfigMap gpuadmit-system/gpuadmit-config; is gpuadmit installed in another namespace? --gpuadmit-namespace)",
			wantPol: "policies: built-in (no ConfigMap of gpuadmit-system matches gpuadmit.io/policy=true)"},
		{name: "the cluster's configuration and policy ConfigMap",
			objects: []runtime.Object{gpuadmitConfig(gs, factor2), policyConfigMap("gpuadmit-policy", map[string]string{"frozen.rego": operatorRule, "frozen_test.rego": "package x\n"}),
				configMap(gs, "other", nil, map[string]string{"x.rego": "not read"}), configMap("elsewhere", "p", map[string]string{"gpuadmit.io/policy": "true"}, nil)},
			wantFactor: 2, wantCfg: "configuration from ConfigMap gpuadmit-system/gpuadmit-config",
			wantPol: "policies: built-in + ConfigMap gpuadmit-system/gpuadmit-policy (2 modules)"},
		{name: "several policy ConfigMaps, by name",
			objects: []runtime.Object{policyConfigMap("b", map[string]string{"x.rego": operatorRule}), policyConfigMap("a", nil)},
			wantCfg: "configuration: the defaults (no ConfigMap gpuadmit-system/gpuadmit-config; is gpuadmit installed in another namespace? --gpuadmit-namespace)",
			wantPol: "policies: built-in + ConfigMaps gpuadmit-system/a (0 modules), gpuadmit-system/b (1 module)"},
		{name: "the configuration's selector and --gpuadmit-namespace",
			objects: []runtime.Object{gpuadmitConfig("gpu", factor2+"policy:\n  configMapSelector: team=ops\n"),
				configMap("gpu", "ops", map[string]string{"team": "ops"}, map[string]string{"x.rego": operatorRule}),
				configMap("gpu", "default-label", map[string]string{"gpuadmit.io/policy": "true"}, nil)},
			flags: Flags{namespace: "gpu"}, wantFactor: 2, wantCfg: "configuration from ConfigMap gpu/gpuadmit-config",
			wantPol: "policies: built-in + ConfigMap gpu/ops (1 module)"},
		{name: "--config and --policy win over the cluster's",
			objects: []runtime.Object{gpuadmitConfig(gs, factor2), policyConfigMap("gpuadmit-policy", map[string]string{"frozen.rego": operatorRule})},
			flags:   Flags{config: "../../../../examples/config/memory-factor-1024.yaml", policy: "../../../../examples/policy"}, wantFactor: 1024,
			wantCfg: "configuration from --config ../../../../examples/config/memory-factor-1024.yaml", wantPol: "policies: built-in + --policy ../../../../examples/policy"},
		{name: "--config alone: the cluster's policy ConfigMaps still",
			objects: []runtime.Object{gpuadmitConfig(gs, factor2), policyConfigMap("gpuadmit-policy", map[string]string{"frozen.rego": operatorRule})},
			flags:   Flags{config: "../../../../examples/config/memory-factor-1024.yaml"}, wantFactor: 1024,
			wantCfg: "configuration from --config ../../../../examples/config/memory-factor-1024.yaml", wantPol: "policies: built-in + ConfigMap gpuadmit-system/gpuadmit-policy (1 module)"},
		{name: "--state: nothing read from the cluster", offline: true, flags: Flags{policy: "../../../../examples/policy"},
			wantCfg: "configuration: the defaults", wantPol: "policies: built-in + --policy ../../../../examples/policy"},
		{name: "no permission: the defaults, said so", react: refuse("*", forbidden),
			wantCfg: `configuration: the defaults (cannot read ConfigMap gpuadmit-system/gpuadmit-config: configmaps "gpuadmit-config" is forbidden: no)`,
			wantPol: `policies: built-in (cannot list the ConfigMaps of gpuadmit-system: configmaps "gpuadmit-config" is forbidden: no)`},
		{name: "the API server fails", react: refuse("get", apierrors.NewInternalError(errors.New("etcd down"))),
			wantErrSub: "reading gpuadmit's configuration (no --config given): Internal error occurred: etcd down"},
		{name: "a configuration the webhook would not start with", objects: []runtime.Object{gpuadmitConfig(gs, factor2+"admission: {nearLimit: 9}\n")},
			wantErrSub: "ConfigMap gpuadmit-system/gpuadmit-config, key config.yaml: unknown key \"admission.nearLimit\""},
		{name: "no config.yaml key", objects: []runtime.Object{configMap(gs, "gpuadmit-config", nil, map[string]string{"other": ""})},
			wantErrSub: "ConfigMap gpuadmit-system/gpuadmit-config has no key config.yaml"},
		{name: "a HAMi file of the webhook's pod, with --policy (eval without them: TestTenantSetup)",
			objects:    []runtime.Object{gpuadmitConfig(gs, strings.Replace(factor2, "  nvidia:\n    memoryFactor: 2\n", "  hamiConfigPath: /etc/hami/device-config.yaml\n", 1))},
			flags:      Flags{policy: "../../../../examples/policy"},
			wantErrSub: "ConfigMap gpuadmit-system/gpuadmit-config: devices.hamiConfigPath names a file of the webhook's pod, which gpuadmit cannot read"},
		{name: "HAMi's ConfigMap, read as the webhook reads it",
			objects: []runtime.Object{gpuadmitConfig(gs, strings.Replace(factor2, "  nvidia:\n    memoryFactor: 2\n", "  hamiConfigMap: kube-system/hami-scheduler-device\n", 1)),
				configMap("kube-system", "hami-scheduler-device", nil, map[string]string{"device-config.yaml": "nvidia:\n  memoryFactor: 3\n"})},
			wantFactor: 3, wantCfg: "configuration from ConfigMap gpuadmit-system/gpuadmit-config",
			wantPol: "policies: built-in (no ConfigMap of gpuadmit-system matches gpuadmit.io/policy=true)"},
		{name: "HAMi's ConfigMap missing: an error, not nvidia's defaults",
			objects:    []runtime.Object{gpuadmitConfig(gs, strings.Replace(factor2, "  nvidia:\n    memoryFactor: 2\n", "  hamiConfigMap: kube-system/hami-scheduler-device\n", 1))},
			wantErrSub: `ConfigMap gpuadmit-system/gpuadmit-config: devices.hamiConfigMap: ConfigMap kube-system/hami-scheduler-device (HAMi's device config): configmaps "hami-scheduler-device" not found: give the configuration`},
		{name: "... which --policy stands for", objects: []runtime.Object{gpuadmitConfig(gs, factor2+"policy:\n  directory: /etc/policies\n")},
			flags: Flags{policy: "../../../../examples/policy"}, wantFactor: 2,
			wantCfg: "configuration from ConfigMap gpuadmit-system/gpuadmit-config", wantPol: "policies: built-in + --policy ../../../../examples/policy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kc := fake.NewClientset(tt.objects...)
			if tt.react != nil {
				tt.react(kc)
			}
			f := tt.flags
			if f.namespace == "" {
				f.namespace = defaultGpuadmitNamespace
			}
			var kube kubernetes.Interface = kc
			if tt.offline {
				kube = nil
			}
			s, err := New(t.Context(), f, kube, true, &bytes.Buffer{})
			if tt.wantErrSub != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSub) {
					t.Fatalf("error %v, want %q", err, tt.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.cfgFrom != tt.wantCfg || s.policiesFrom != tt.wantPol {
				t.Errorf("said\n%q\n%q\nwant\n%q\n%q", s.cfgFrom, s.policiesFrom, tt.wantCfg, tt.wantPol)
			}
			if got := max(config.Settings(s.Cfg).MemoryFactor, 1); got != max(tt.wantFactor, 1) {
				t.Errorf("memoryFactor %d, want %d", got, tt.wantFactor)
			}
		})
	}
}

// TestSetupRejectedPolicies: a policy set the webhook rejects fails eval
// with the message the webhook's engine gives for the same sources.
func TestSetupRejectedPolicies(t *testing.T) {
	cm := policyConfigMap("gpuadmit-policy", map[string]string{"frozen.rego": operatorRule,
		"frozen_test.rego": "package gpuadmit.admission_test\n\nimport data.gpuadmit.admission\n\ntest_wrong if count(admission.deny) == 1 with input as {\"namespace\": \"warm\"}\n"})
	s, err := New(t.Context(), Flags{namespace: "gpuadmit-system"}, fake.NewClientset(cm), true, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Engine(t.Context())
	webhook := policy.New(policy.Options{}).Load(t.Context(), policysource.Sources("", []*corev1.ConfigMap{cm})...)
	if err == nil || webhook == nil {
		t.Fatalf("eval: %v; the webhook's engine: %v; want both rejected", err, webhook)
	}
	for _, want := range []string{"the cluster's policy set is rejected, as the webhook rejects it", webhook.Error(), "test_wrong"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
