package setup

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/policysource"
)

// tenantReads lets the fake API server answer get of the named
// ConfigMaps alone, as the chart's rbac.tenantReadAccess grants: any
// other get, and every list, is forbidden.
func tenantReads(names ...string) func(*fake.Clientset) {
	return func(c *fake.Clientset) {
		c.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if g, ok := a.(k8stesting.GetAction); ok && slices.Contains(names, g.GetName()) {
				return false, nil, nil
			}
			return true, nil, forbidden
		})
	}
}

// TestTenantSetup: a namespace user who may get gpuadmit's ConfigMaps by
// name but not list them decides with the cluster's configuration and the
// accepted set (the policies the replicas run); what it is refused is
// named in Forbidden, which makes eval ask the webhook instead: never the
// defaults presented as the cluster's.
func TestTenantSetup(t *testing.T) {
	gs := "gpuadmit-system"
	snap := policysource.Snapshot{Sources: []policysource.SnapshotSource{{Name: "configmap gpuadmit-system/gpuadmit-policy",
		Modules: map[string]string{"frozen.rego": operatorRule}}}}
	data, err := snap.Data("7")
	if err != nil {
		t.Fatal(err)
	}
	accepted := configMap(gs, policysource.AcceptedConfigMap, nil, data)
	for _, tt := range []struct {
		name string
		// cfg is the configuration's text (factor2 when empty).
		cfg           string
		react         func(*fake.Clientset)
		flags         Flags
		wantFactor    int64
		wantPol       string
		wantForbidden []string
		wantGiven     bool
	}{
		{name: "get by name (rbac.tenantReadAccess): the configuration and the accepted set",
			react: tenantReads("gpuadmit-config", "gpuadmit-policy", policysource.AcceptedConfigMap), wantFactor: 2,
			wantPol: "policies: built-in + the set the webhook runs (ConfigMap gpuadmit-system/gpuadmit-policy-accepted, revision 7)"},
		{name: "nothing readable: both named", react: refuse("*", forbidden),
			wantPol:       `policies: built-in (cannot list the ConfigMaps of gpuadmit-system: configmaps "gpuadmit-config" is forbidden: no)`,
			wantForbidden: []string{"get configmap gpuadmit-system/gpuadmit-config", "list configmaps in namespace gpuadmit-system"}},
		{name: "the configuration alone: the policies named", react: tenantReads("gpuadmit-config"), wantFactor: 2,
			wantPol:       `policies: built-in (cannot list the ConfigMaps of gpuadmit-system: configmaps "gpuadmit-config" is forbidden: no)`,
			wantForbidden: []string{"list configmaps in namespace gpuadmit-system"}},
		{name: "--config: given", react: refuse("*", forbidden), flags: Flags{config: "../../../../examples/config/memory-factor-1024.yaml"},
			wantFactor: 1024, wantGiven: true,
			wantPol:       `policies: built-in (cannot list the ConfigMaps of gpuadmit-system: configmaps "gpuadmit-config" is forbidden: no)`,
			wantForbidden: []string{"list configmaps in namespace gpuadmit-system"}},
		{name: "a HAMi file of the webhook's pod: named, the defaults meanwhile", cfg: "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\ndevices:\n  hamiConfigPath: /etc/hami/device-config.yaml\n",
			react: tenantReads("gpuadmit-config"), wantPol: `policies: built-in (cannot list the ConfigMaps of gpuadmit-system: configmaps "gpuadmit-config" is forbidden: no)`,
			wantForbidden: []string{"read devices.hamiConfigPath (a file of the webhook's pod)", "list configmaps in namespace gpuadmit-system"}},
		{name: "HAMi's ConfigMap refused (devices.hamiConfigMap): named, the defaults meanwhile",
			cfg:   "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\ndevices:\n  hamiConfigMap: kube-system/hami-scheduler-device\n",
			react: tenantReads("gpuadmit-config"), wantPol: `policies: built-in (cannot list the ConfigMaps of gpuadmit-system: configmaps "gpuadmit-config" is forbidden: no)`,
			wantForbidden: []string{"get configmap kube-system/hami-scheduler-device", "list configmaps in namespace gpuadmit-system"}},
		{name: "a policy directory of the webhook's pod: named", cfg: factor2 + "policy:\n  directory: /etc/policies\n", react: tenantReads("gpuadmit-config"), wantFactor: 2,
			wantPol:       `policies: built-in (the cluster's configuration loads policy.directory "/etc/policies", a directory of the webhook's pod, which gpuadmit cannot read: give its modules with --policy DIR)`,
			wantForbidden: []string{"read policy.directory (a directory of the webhook's pod)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			if cfg == "" {
				cfg = factor2
			}
			kc := fake.NewClientset(gpuadmitConfig(gs, cfg), policyConfigMap("gpuadmit-policy", map[string]string{"frozen.rego": operatorRule}), accepted)
			tt.react(kc)
			f := tt.flags
			f.namespace = gs
			s, err := New(t.Context(), f, kc, true, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			if s.policiesFrom != tt.wantPol || !slices.Equal(s.Forbidden(), tt.wantForbidden) || s.Given() != tt.wantGiven {
				t.Errorf("policies %q, forbidden %q, given %v; want %q, %q, %v", s.policiesFrom, s.Forbidden(), s.Given(), tt.wantPol, tt.wantForbidden, tt.wantGiven)
			}
			if got := max(config.Settings(s.Cfg).MemoryFactor, 1); got != max(tt.wantFactor, 1) {
				t.Errorf("memoryFactor %d, want %d", got, tt.wantFactor)
			}
			if strings.Contains(tt.wantPol, "the set the webhook runs") {
				e, err := s.Engine(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if st := e.Status(); !strings.Contains(strings.Join(st.Modules, ","), "accepted configmap gpuadmit-system/gpuadmit-policy") {
					t.Errorf("engine modules %q, want the accepted set's", st.Modules)
				}
			}
		})
	}
}
