package server

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	ctrladmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/admission"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/stamp"
	"github.com/gpuadmit/gpuadmit/pkg/workload"
)

// Stamping paths: the mutating reviews of workloads (their pod templates)
// and of ResourceClaims, which get the requesting-user stamp.
const (
	MutateWorkloadsPath = "/mutate-workloads"
	MutateClaimsPath    = "/mutate-resourceclaims"
)

// stampKeyWait bounds how long New waits for the stamp key Secret (read,
// or created by the first replica) while the API server is unreachable.
const stampKeyWait = time.Minute

// loadStamper reads (or creates) the stamp key in the server's namespace
// and builds the Stamper with every configured kind's pod creator. It runs
// before the ledger exists: the ledger asks it who each pod is charged to
// from the first pod it records.
func (s *Server) loadStamper(kube kubernetes.Interface) error {
	kinds, err := config.WorkloadKinds(s.opts.Config)
	if err != nil {
		return err
	}
	var creators []stamp.Creator
	kinds.Each(func(k *workload.Kind) {
		if k.PodCreator.Username != "" {
			creators = append(creators, stamp.Creator{Group: k.Group, Kind: k.Kind, Username: k.PodCreator.Username})
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), stampKeyWait)
	defer cancel()
	var key []byte
	var last error
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		key, last = stamp.LoadKey(ctx, kube.CoreV1(), s.opts.Namespace)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the requesting-user stamp key: %w", last)
	}
	s.stamper, err = stamp.New(key, creators)
	return err
}

// stampHandlers registers the mutating handlers of workloads and claims.
// A template claim's pod is read from the API with kube.
func (s *Server) stampHandlers(kube kubernetes.Interface, am *admission.Metrics, requestLog func(string) ctrlLog) error {
	kinds, err := config.WorkloadKinds(s.opts.Config)
	if err != nil {
		return err
	}
	timeout := s.opts.Config.Admission.ReviewTimeout.Duration
	hooks := s.mgr.GetWebhookServer()
	hooks.Register(MutateWorkloadsPath, s.draining(detached(&ctrladmission.Webhook{Handler: &admission.WorkloadStamper{
		Kinds: kinds, Stamp: s.stamper, Metrics: am}, RecoverPanic: ptr.To(true), LogConstructor: requestLog("mutate-workloads")}, timeout)))
	hooks.Register(MutateClaimsPath, s.draining(detached(&ctrladmission.Webhook{Handler: &admission.ClaimStamper{
		Stamp: s.stamper, Pods: podReader{kube}, Metrics: am}, RecoverPanic: ptr.To(true), LogConstructor: requestLog("mutate-claims")}, timeout)))
	return nil
}

// podReader reads a pod with a GET (a template claim's pod was just
// created: an informer may not have it yet).
type podReader struct{ kube kubernetes.Interface }

func (p podReader) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	pod, err := p.kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading pod %s/%s: %w", namespace, name, err)
	}
	return pod, nil
}
