package source

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/cmd/gpuadmit/app/cmdline"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// NamespaceExists checks that the namespace a report shows exists, as
// kubectl's commands do: in a dump, that the dump holds the Namespace or an
// object of it (led is the dump's ledger); in the cluster, that the API
// server does not answer NotFound (a tenant who may not read namespaces is
// not refused: the API server then cannot say).
func NamespaceExists(ctx context.Context, src Source, led *ledger.Ledger, ns string) error {
	switch s := src.(type) {
	case Dump:
		snap := led.Snapshot(nil)
		if _, ok := snap.Namespaces[ns]; ok || led.Namespace(ns, nil).LabelsKnown {
			return nil
		}
		return fmt.Errorf("namespace %q not found: %s holds no Namespace, Pod, ResourceQuota or ResourceClaim of it%s",
			ns, s.Path, cmdline.DidYouMeanOf(ns, SortedNamespaces(snap)))
	case live:
		kc, err := s.client()
		if err != nil {
			return err
		}
		_, err = kc.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %q not found in the cluster", ns)
		}
	}
	return nil
}
