package source

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
)

// ReadsCluster is the annotation of the commands that read the cluster
// (usage, eval): the others' help leaves the connection flags out.
const ReadsCluster = "gpuadmit.io/reads-cluster"

// completionTimeout bounds listing the namespaces to complete -n.
const completionTimeout = 3 * time.Second

// pointAtCluster says how to name a cluster, or do without one.
const pointAtCluster = "point at a cluster with --kubeconfig FILE or --context NAME, or run offline on a dump with --state STATE.yaml"

// ConnectionFlags adds kubectl's connection flags (--kubeconfig,
// --context, -n, --as, ...) to root, for every command, as kubectl has
// them; -n completes the live cluster's namespaces. The help of a command
// that reads no cluster leaves them out.
func ConnectionFlags(c *cmdline.CLI, root *cobra.Command) {
	c.Kube.AddFlags(root.PersistentFlags())
	var names []string
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	_ = root.RegisterFlagCompletionFunc("namespace", func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return completeNamespaces(c, cmd, args, toComplete)
	})
	help := root.HelpFunc()
	root.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		offline := cmd != root && cmd.Annotations[ReadsCluster] == ""
		for _, n := range names {
			root.PersistentFlags().Lookup(n).Hidden = offline
		}
		help(cmd, args)
	})
}

// completeNamespaces lists the namespaces of the cluster the command line
// names, those that begin with toComplete; nothing, silently, when no
// cluster answers.
func completeNamespaces(c *cmdline.CLI, cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	const directive = cobra.ShellCompDirectiveNoFileComp
	kc, err := live{kube: c.Kube, userAgent: c.UserAgent()}.client()
	if err != nil {
		return nil, directive
	}
	ctx, cancel := context.WithTimeout(cmp.Or(cmd.Context(), context.Background()), completionTimeout)
	defer cancel()
	l, err := kc.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, directive
	}
	var out []cobra.Completion
	for _, ns := range l.Items {
		if strings.HasPrefix(ns.Name, toComplete) {
			out = append(out, ns.Name)
		}
	}
	slices.Sort(out)
	return out, directive
}

// kubeconfigError says what is wrong with the kubeconfig and how to name
// another, or run without one.
func kubeconfigError(err error) error {
	if clientcmd.IsEmptyConfig(err) {
		return fmt.Errorf("no --state given and no kubeconfig found ($KUBECONFIG, ~/.kube/config), nor a cluster to run in: %s", pointAtCluster)
	}
	return fmt.Errorf("no --state given, reading the kubeconfig: %w; %s", err, pointAtCluster)
}

// Unreachable replaces an error of a live command that no cluster
// answered (a connection refused, a host name that does not resolve, a
// dial that timed out) with one line naming the server tried and how to
// point at another, or run offline.
func Unreachable(c *cmdline.CLI, err error) error {
	var op *net.OpError
	var dns *net.DNSError
	var reason error
	switch {
	case errors.As(err, &dns):
		reason = dns
	case errors.As(err, &op) && op.Op == "dial":
		reason = op
	default:
		return err
	}
	return fmt.Errorf("no cluster answers: %s (%w); %s", triedServer(c), reason, pointAtCluster)
}

// triedServer says which server the command line tried: that of the
// kubeconfig context, or kubectl's default when there is no kubeconfig.
func triedServer(c *cmdline.CLI) string {
	loader := c.Kube.ToRawKubeConfigLoader()
	server := "the server"
	if cfg, err := loader.ClientConfig(); err == nil {
		server = cfg.Host
	}
	raw, err := loader.RawConfig()
	switch {
	case err != nil:
	case len(raw.Clusters) == 0 && *c.Kube.APIServer == "":
		return "no kubeconfig was found ($KUBECONFIG, ~/.kube/config), and kubectl's default server " + server + " is not reachable"
	case cmp.Or(*c.Kube.Context, raw.CurrentContext) != "":
		return fmt.Sprintf("the cluster of context %q at %s is not reachable", cmp.Or(*c.Kube.Context, raw.CurrentContext), server)
	}
	return "the cluster at " + server + " is not reachable"
}
