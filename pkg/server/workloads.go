package server

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrladmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/gpuadmit/gpuadmit/pkg/admission"
	configv1alpha1 "github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/reservation"
	"github.com/gpuadmit/gpuadmit/pkg/workloadcheck"
)

// ctrlLog builds a review's logger.
type ctrlLog = func(logr.Logger, *ctrladmission.Request) logr.Logger

// ValidateWorkloadsPath takes the reviews of workloads (Deployments, Jobs,
// the configured kinds) and of their scale subresource.
const ValidateWorkloadsPath = "/validate-workloads"

// workloads registers the workloads handler: the decider's demand and
// limits, the workload read through the API server (never the cache: a
// scale review checks the template the workload has now), the ledger's
// charges of its own pods, and the reservations of this replica's store.
func (s *Server) workloads(dec *decision.Decider, am *admission.Metrics, requestLog func(string) ctrlLog) error {
	kinds, err := config.WorkloadKinds(s.opts.Config)
	if err != nil {
		return err
	}
	warn := s.opts.Config.Workloads != nil && ptr.Deref(s.opts.Config.Workloads.Enforcement, "") == configv1alpha1.WorkloadEnforcementWarn
	h := &ctrladmission.Webhook{Handler: &admission.WorkloadValidator{Gate: s, GPUPods: dec, Kinds: kinds,
		Checker: &workloadcheck.Checker{Fit: dec, Warn: warn}, Reader: apiReader{s.mgr.GetAPIReader()},
		Own: ownPods{s}, Pending: pending{s}, Metrics: am}, RecoverPanic: ptr.To(true), LogConstructor: requestLog("validate-workloads")}
	s.mgr.GetWebhookServer().Register(ValidateWorkloadsPath, s.draining(detached(h, s.opts.Config.Admission.ReviewTimeout.Duration)))
	return nil
}

// apiReader reads a workload from the API server as unstructured JSON.
type apiReader struct{ r client.Reader }

func (a apiReader) Read(ctx context.Context, gvk schema.GroupVersionKind, ns, name string) (map[string]any, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := a.r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		return nil, fmt.Errorf("reading %s %s/%s: %w", gvk.Kind, ns, name, err)
	}
	return u.Object, nil
}

// ownPods are a workload's pods as the ledger records them.
type ownPods struct{ s *Server }

func (o ownPods) Own(ns, kind, name string) effective.Usage {
	return workloadcheck.OwnCharge(o.s.Ledger.Charges(ns), kind, name)
}

// pending are the reservations this replica counts in a namespace.
type pending struct{ s *Server }

func (p pending) Pending(ctx context.Context, ns string) ([]reservation.Reservation, error) {
	all, err := p.s.Store.Reserved(ctx)
	if err != nil {
		return nil, err
	}
	return all[ns], nil
}
