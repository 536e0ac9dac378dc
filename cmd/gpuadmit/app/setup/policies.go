package setup

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
	"github.com/gpuadmit/gpuadmit/pkg/policysource"
	"github.com/gpuadmit/gpuadmit/policy"
)

// findPolicies sets the operator policy sources: --policy, else (with
// kube) the cluster's policy ConfigMaps, which the configuration's
// policy.configMapSelector selects in the gpuadmit namespace, loaded as
// the webhook loads them (pkg/policysource). The directory of a
// configuration from --config comes first, as the webhook loads its own.
func (s *Setup) findPolicies(ctx context.Context, f Flags, kube kubernetes.Interface) error {
	dir := *s.Cfg.Policy.Directory
	if s.cfgInCluster && dir != "" {
		if f.policy == "" {
			return &podFileError{what: "read policy.directory (a directory of the webhook's pod)",
				err: fmt.Errorf("the cluster's configuration loads policy.directory %q, a directory of the webhook's pod, which gpuadmit cannot read: "+
					"give its modules with --policy DIR", dir)}
		}
		dir = "" // --policy stands for the webhook's operator policies
	}
	from := []string{"built-in"}
	if dir != "" {
		s.policies = append(s.policies, policy.Dir(dir))
		from = append(from, "directory "+dir)
	}
	switch {
	case f.policy != "":
		s.policies = append(s.policies, policy.Dir(f.policy))
		s.policiesFrom = "policies: " + strings.Join(append(from, "--policy "+f.policy), " + ")
		return nil
	case kube == nil:
		s.policiesFrom = "policies: " + strings.Join(from, " + ")
		return nil
	}
	cms, why, err := policyConfigMaps(ctx, kube, f.namespace, *s.Cfg.Policy.ConfigMapSelector)
	if errors.Is(err, errListForbidden) {
		if s.acceptedSet(ctx, kube, f.namespace, from) {
			return nil
		}
		s.forbidden = append(s.forbidden, "list configmaps in namespace "+f.namespace)
		err = nil
	}
	if err != nil {
		return err
	}
	if len(cms) == 0 {
		s.policiesFrom = "policies: " + strings.Join(from, " + ") + " (" + why + ")"
		return nil
	}
	s.policies, s.clusterPolicies = policysource.Sources(dir, cms), true
	s.policiesFrom = "policies: " + strings.Join(append(from, configMapList(cms)), " + ")
	return nil
}

// policyConfigMaps lists the policy ConfigMaps of namespace; when there
// are none, or the user may not list them, why says so.
func policyConfigMaps(ctx context.Context, kube kubernetes.Interface, namespace, selector string) (cms []*corev1.ConfigMap, why string, err error) {
	sel, err := policysource.Selector(selector)
	if err != nil {
		return nil, "", err
	}
	cms, err = clusterstate.PolicyConfigMaps(ctx, kube, namespace, sel)
	switch {
	case apierrors.IsForbidden(err):
		return nil, fmt.Sprintf("cannot list the ConfigMaps of %s: %v", namespace, err), fmt.Errorf("%w: %w", errListForbidden, err)
	case err != nil:
		return nil, "", fmt.Errorf("listing the policy ConfigMaps of %s: %w", namespace, err)
	case len(cms) == 0:
		return nil, fmt.Sprintf("no ConfigMap of %s matches %s", namespace, selector), nil
	}
	return cms, "", nil
}

// errListForbidden: the user may not list the policy ConfigMaps.
var errListForbidden = errors.New("listing the policy ConfigMaps is forbidden")

// acceptedSet sets the operator policy sources to the accepted set (the
// set a replica last activated, which the replicas run: ConfigMap
// gpuadmit-policy-accepted in namespace) when the user may not list the
// policy ConfigMaps but may get that one (the chart's
// rbac.tenantReadAccess); false when it cannot be read or holds no set.
func (s *Setup) acceptedSet(ctx context.Context, kube kubernetes.Interface, namespace string, from []string) bool {
	cm, err := kube.CoreV1().ConfigMaps(namespace).Get(ctx, policysource.AcceptedConfigMap, metav1.GetOptions{})
	if err != nil {
		return false
	}
	snap, err := policysource.Accepted(cm)
	if err != nil {
		return false
	}
	s.policies, s.clusterPolicies = snap.PolicySources("accepted "), true
	s.policiesFrom = fmt.Sprintf("policies: %s + the set the webhook runs (ConfigMap %s/%s, revision %s)",
		strings.Join(from, " + "), namespace, policysource.AcceptedConfigMap, cm.Data[policysource.AcceptedRevisionKey])
	return true
}

// configMapList names the ConfigMaps (sorted) and their modules:
// "ConfigMap ns/a (2 modules)", "ConfigMaps ns/a (1 module), ns/b (0 modules)".
func configMapList(cms []*corev1.ConfigMap) string {
	names := make([]string, 0, len(cms))
	for _, cm := range cms {
		n := policysource.Modules(cm)
		unit := "modules"
		if n == 1 {
			unit = "module"
		}
		names = append(names, fmt.Sprintf("%s/%s (%d %s)", cm.Namespace, cm.Name, n, unit))
	}
	kind := "ConfigMap "
	if len(cms) > 1 {
		kind = "ConfigMaps "
	}
	return kind + strings.Join(names, ", ")
}
