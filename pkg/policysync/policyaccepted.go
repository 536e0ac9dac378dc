package policysync

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/gpuadmit/gpuadmit/pkg/policysource"
)

// acceptedPrefix names the sources of a set activated from the accepted
// ConfigMap (the engine's module file names carry it).
const acceptedPrefix = "accepted "

// persist stores snap, just activated as revision, in the accepted
// ConfigMap unless it holds that set already (an update with the
// resourceVersion it read: concurrent writers retry). The last set a
// replica activated is what a replica starting while the cluster's set is
// rejected falls back to. A failure is logged and counted
// (result="persist-error"): the active set is not affected, only what a
// replica starting while the cluster's set is rejected would fall back to.
func (p *Sync) persist(ctx context.Context, snap policysource.Snapshot, revision string) {
	p.fromAccepted, p.activeDigest = false, snap.Digest()
	if err := p.store(ctx, snap, revision); err != nil {
		p.metrics.reloads.WithLabelValues("persist-error").Inc()
		p.log.Error(err, "storing the accepted policy set; a replica starting while the cluster's set is rejected would not find it",
			"configmap", klog.KRef(p.namespace, policysource.AcceptedConfigMap))
	}
}

func (p *Sync) store(ctx context.Context, snap policysource.Snapshot, revision string) error {
	data, err := snap.Data(revision)
	if err != nil {
		return err
	}
	cms := p.kube.CoreV1().ConfigMaps(p.namespace)
	for range 3 {
		cm, err := cms.Get(ctx, policysource.AcceptedConfigMap, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("reading ConfigMap %s: %w", policysource.AcceptedConfigMap, err)
		}
		if err == nil && cm.Data[policysource.AcceptedDigestKey] == data[policysource.AcceptedDigestKey] {
			return nil
		}
		if apierrors.IsNotFound(err) {
			// The chart creates it empty; without the chart this needs the
			// right to create ConfigMaps.
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: policysource.AcceptedConfigMap, Namespace: p.namespace}, Data: data}
			if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating ConfigMap %s: %w", policysource.AcceptedConfigMap, err)
			}
			continue // created, or another replica did: check what it holds
		}
		cm = cm.DeepCopy()
		cm.Data = data
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{}) // the resourceVersion read above
		if !apierrors.IsConflict(err) {
			if err != nil {
				return fmt.Errorf("updating ConfigMap %s: %w", policysource.AcceptedConfigMap, err)
			}
			return nil
		}
	}
	return fmt.Errorf("updating ConfigMap %s: still conflicting after 3 attempts", policysource.AcceptedConfigMap)
}

// fallback runs when the cluster's set was rejected (why) and no set is
// active: this replica is starting, its peers keep the last set they
// accepted. It activates the accepted set, compiled and tested like any
// other; when there is none, or it is rejected too, it activates nothing
// (the built-in policies alone would be fewer rules than the peers run),
// and the replica stays unready with the reason in the engine's status
// (the readiness check's body), the log and
// gpuadmit_policy_reloads_total{result="refused"}. It returns an error
// when the attempt is to be retried (the accepted ConfigMap could not be
// read, or its load failed retriably).
func (p *Sync) fallback(ctx context.Context, why error) error {
	ref := p.namespace + "/" + policysource.AcceptedConfigMap
	cm, err := p.kube.CoreV1().ConfigMaps(p.namespace).Get(ctx, policysource.AcceptedConfigMap, metav1.GetOptions{})
	retry := err != nil && !apierrors.IsNotFound(err)
	switch {
	case apierrors.IsNotFound(err):
		err = policysource.ErrNoAccepted
	case err == nil:
		if err = p.loadAccepted(ctx, cm, why); err == nil {
			return nil
		}
		retry = retriable(err)
	}
	p.metrics.reloads.WithLabelValues("refused").Inc()
	p.engine.Reject(fmt.Errorf("no policy set is active, so this replica is not ready: the cluster's policy set was rejected (%w), "+
		"and the accepted set (ConfigMap %s) cannot replace it: %w", why, ref, err))
	if retry {
		return fmt.Errorf("activating the accepted policy set (ConfigMap %s): %w", ref, err)
	}
	return nil
}

// loadAccepted activates the set of the accepted ConfigMap cm, compiled
// and tested, because the cluster's set was rejected (why).
func (p *Sync) loadAccepted(ctx context.Context, cm *corev1.ConfigMap, why error) error {
	snap, err := policysource.Accepted(cm)
	if err == nil {
		err = p.engine.Load(ctx, snap.PolicySources(acceptedPrefix)...)
	}
	if err != nil {
		return err
	}
	p.fromAccepted, p.activeDigest = true, cm.Data[policysource.AcceptedDigestKey]
	p.metrics.reloads.WithLabelValues("accepted-set-activated").Inc()
	// The cluster's set stays the last load, and it failed
	// (gpuadmit_policy_last_load_failed, the alert on it).
	p.engine.Reject(fmt.Errorf("the cluster's policy set was rejected (%w); running the accepted set (ConfigMap %s/%s, revision %s), as the other replicas do",
		why, p.namespace, policysource.AcceptedConfigMap, p.engine.Status().Revision))
	return nil
}

// active describes the active set for the status annotation.
func (p *Sync) active() string {
	rev := p.engine.Status().Revision
	switch {
	case rev == "":
		return "none (this replica is not ready)"
	case p.fromAccepted:
		return "revision " + rev + " (the accepted set, ConfigMap " + policysource.AcceptedConfigMap + ")"
	}
	return "revision " + rev
}

// annotate writes status in each ConfigMap's status annotation (when it differs).
func (p *Sync) annotate(ctx context.Context, cms []*corev1.ConfigMap, status string) {
	for _, cm := range cms {
		if cm.Annotations[StatusAnnotation] == status {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{StatusAnnotation: status}}})
		if _, err := p.kube.CoreV1().ConfigMaps(cm.Namespace).Patch(ctx, cm.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			p.log.Error(err, "writing the policy status annotation", "configmap", klog.KObj(cm))
		}
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
