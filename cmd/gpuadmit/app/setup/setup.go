package setup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/pkg/clusterstate"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/policy"
)

// defaultGpuadmitNamespace is where the chart installs gpuadmit.
const defaultGpuadmitNamespace = "gpuadmit-system"

// Flags say what usage and eval decide with: --config, --policy
// (eval) and --gpuadmit-namespace.
type Flags struct {
	config, policy, namespace string
}

// Namespace is --gpuadmit-namespace: where gpuadmit's own objects are.
func (f Flags) Namespace() string { return f.namespace }

// FlagsOn adds the flags of f to cmd; policies adds --policy.
func FlagsOn(cmd *cobra.Command, f *Flags, policies bool) {
	cmdline.ConfigFlag(cmd, &f.config, "the cluster's (ConfigMap gpuadmit-config), or every default with --state")
	if policies {
		cmd.Flags().StringVar(&f.policy, "policy", "",
			"directory of Rego modules added to (or, by file name, replacing) the built-in policies; default: the cluster's policy ConfigMaps, or none with --state")
		_ = cmd.MarkFlagDirname("policy")
	}
	cmd.Flags().StringVar(&f.namespace, "gpuadmit-namespace", defaultGpuadmitNamespace,
		"the namespace gpuadmit runs in, where its configuration and policy ConfigMaps are read (without --state)")
}

// CheckFlags refuses --gpuadmit-namespace with --state: nothing is
// read from the cluster then.
func CheckFlags(cmd *cobra.Command, state string) error {
	if state != "" && cmd.Flags().Changed("gpuadmit-namespace") {
		return cmdline.UsageErrorf("--gpuadmit-namespace names where the cluster's configuration is read; with --state nothing is read from the cluster")
	}
	return nil
}

// Setup is what a command decides with and where it came from.
type Setup struct {
	Cfg *config.Configuration
	// policies are the operator policy sources, loaded after the built-in
	// ones.
	policies []policy.Source
	// cfgFrom and policiesFrom say where cfg and policies came from.
	cfgFrom, policiesFrom string
	// cfgInCluster: cfg is the cluster's; clusterPolicies: policies are
	// the cluster's ConfigMaps.
	cfgInCluster, clusterPolicies bool
	// forbidden names the reads of gpuadmit's configuration and policies
	// the user was refused ("get configmap gpuadmit-system/gpuadmit-config"):
	// cfg or policies are the defaults in their stead.
	forbidden []string
	// given: --config or --policy names what to decide with.
	given bool
}

// Forbidden names the reads of the cluster's configuration and policies
// the user was refused: the setup decides without them.
func (s Setup) Forbidden() []string { return s.forbidden }

// Given reports that --config or --policy names what to decide with, not
// the cluster's setup.
func (s Setup) Given() bool { return s.given }

// New finds the configuration and, with policies, the policy sources:
// those of the flags where given, else, with kube (no --state), the
// cluster's, else the defaults.
//
// With policies (eval), neither --config nor --policy given, a
// configuration or policy directory that names a file of the webhook's pod
// is no error: what cannot be read is named in Forbidden, and eval asks
// the webhook instead of deciding without it.
func New(ctx context.Context, f Flags, kube kubernetes.Interface, policies bool, stderr io.Writer) (Setup, error) {
	webhookDecides := policies && f.config == "" && f.policy == ""
	var pf *podFileError
	s, err := configOf(ctx, f, kube, stderr)
	if webhookDecides && errors.As(err, &pf) {
		s, err = Setup{Cfg: config.Default(), cfgFrom: "configuration: the defaults (" + err.Error() + ")", forbidden: []string{pf.what}}, nil
	}
	s.given = f.config != "" || f.policy != ""
	if err != nil || !policies {
		return s, err
	}
	err = s.findPolicies(ctx, f, kube)
	if webhookDecides && errors.As(err, &pf) {
		s.policiesFrom, s.forbidden, err = "policies: built-in ("+err.Error()+")", append(s.forbidden, pf.what), nil
	}
	return s, err
}

// podFileError: the cluster's configuration names what the command line
// cannot read: a file or directory of the webhook's pod, or HAMi's
// ConfigMap (devices.hamiConfigMap) the user may not get.
type podFileError struct {
	// what names it as eval's "as you may not ..." line does.
	what string
	err  error
}

func (e *podFileError) Error() string { return e.err.Error() }

// Say prints, on stderr, the line saying what cmd decides with: always
// when reading the cluster, else only when --config or --policy was given.
func (s Setup) Say(cmd *cobra.Command, f Flags, live, policies bool, stderr io.Writer) {
	if !live && f.config == "" && f.policy == "" {
		return
	}
	line := s.cfgFrom
	if policies {
		line += "; " + s.policiesFrom
	}
	fmt.Fprintf(stderr, "%s: %s\n", cmd.CommandPath(), line)
}

// configOf finds the configuration: --config, else the cluster's (when
// kube is set), else every default.
func configOf(ctx context.Context, f Flags, kube kubernetes.Interface, stderr io.Writer) (Setup, error) {
	if f.config != "" {
		cfg, err := LoadConfig(f.config, stderr)
		return Setup{Cfg: cfg, cfgFrom: "configuration from --config " + f.config}, err
	}
	if kube == nil {
		return Setup{Cfg: config.Default(), cfgFrom: "configuration: the defaults"}, nil
	}
	where := fmt.Sprintf("ConfigMap %s/%s", f.namespace, clusterstate.ConfigMapName)
	text, err := clusterstate.Config(ctx, kube, f.namespace)
	switch {
	case apierrors.IsNotFound(err):
		return Setup{Cfg: config.Default(), cfgFrom: fmt.Sprintf("configuration: the defaults (no %s; is gpuadmit installed in another namespace? --gpuadmit-namespace)", where)}, nil
	case apierrors.IsForbidden(err):
		return Setup{Cfg: config.Default(), cfgFrom: fmt.Sprintf("configuration: the defaults (cannot read %s: %v)", where, err),
			forbidden: []string{"get configmap " + f.namespace + "/" + clusterstate.ConfigMapName}}, nil
	case err != nil:
		return Setup{}, fmt.Errorf("reading gpuadmit's configuration (no --config given): %w", err)
	}
	cfg, err := clusterConfig(text, where, stderr)
	if err == nil {
		err = clusterHAMiConfigMap(ctx, kube, f.namespace, cfg, where, stderr)
	}
	if err != nil {
		return Setup{}, err
	}
	return Setup{Cfg: cfg, cfgFrom: "configuration from " + where, cfgInCluster: true}, nil
}

// clusterConfig parses the webhook's configuration as the webhook reads
// it. A devices.hamiConfigPath names a file of the webhook's pod, which
// the command line cannot read: an error rather than other device
// settings than the webhook's.
func clusterConfig(text, where string, stderr io.Writer) (*config.Configuration, error) {
	var refs struct {
		APIVersion string                     `json:"apiVersion"`
		Devices    map[string]json.RawMessage `json:"devices"`
	}
	if err := yaml.Unmarshal([]byte(text), &refs); err == nil && refs.APIVersion != "" {
		if _, ok := refs.Devices["hamiConfigPath"]; ok {
			return nil, &podFileError{what: "read devices.hamiConfigPath (a file of the webhook's pod)",
				err: fmt.Errorf("%s: devices.hamiConfigPath names a file of the webhook's pod, which gpuadmit cannot read: "+
					"give the configuration with its devices written out with --config", where)}
		}
	}
	cfg, ignored, err := config.Parse([]byte(text))
	if w := config.IgnoredWarning(ignored); w != "" {
		fmt.Fprintf(stderr, "gpuadmit: warning: %s: %s\n", where, w)
	}
	if err != nil {
		return nil, fmt.Errorf("%s, key %s: %w", where, clusterstate.ConfigKey, err)
	}
	return cfg, nil
}

// Engine loads the built-in policies and s.policies as the webhook loads
// them: compiled and tested as one set, activated only when that passes.
func (s Setup) Engine(ctx context.Context) (*policy.Engine, error) {
	engine, err := loadSources(ctx, s.Cfg, s.policies)
	if err != nil && s.clusterPolicies && !errors.Is(err, policy.ErrRead) {
		return nil, fmt.Errorf("the cluster's policy set is rejected, as the webhook rejects it (it keeps deciding with its last good set, "+
			"which the policy ConfigMaps' gpuadmit.io/policy-status annotation names): %w", err)
	}
	return engine, err
}

// clusterHAMiConfigMap reads HAMi's device config from the ConfigMap that
// the cluster's configuration names (devices.hamiConfigMap), as the
// webhook reads it, with the user's rights: one the user cannot read is an
// error, not other device settings than the webhook's.
func clusterHAMiConfigMap(ctx context.Context, kube kubernetes.Interface, namespace string, cfg *config.Configuration, where string, stderr io.Writer) error {
	ignored, err := config.ReadHAMiConfigMap(ctx, cfg, namespace, func(ctx context.Context, ns, name string) (map[string]string, error) {
		cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		return cm.Data, nil
	})
	if err != nil {
		err = fmt.Errorf("%s: %w: give the configuration with its devices written out with --config", where, err)
	}
	if apierrors.IsForbidden(err) {
		return &podFileError{what: "get configmap " + ptr.Deref(cfg.Devices.HAMiConfigMap, ""), err: err}
	}
	if err != nil {
		return err
	}
	if w := config.IgnoredWarning(ignored); w != "" {
		fmt.Fprintf(stderr, "gpuadmit: warning: %s: %s\n", where, w)
	}
	if w := config.SwitchedOffWarning(cfg); w != "" {
		fmt.Fprintf(stderr, "gpuadmit: warning: %s: %s\n", where, w)
	}
	return nil
}
