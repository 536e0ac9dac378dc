package eval

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpuadmit/gpuadmit/pkg/apis/config/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/manifest"
	"github.com/gpuadmit/gpuadmit/pkg/workload"
	"github.com/gpuadmit/gpuadmit/pkg/workloadcheck"
)

// A workload is decided twice, as the cluster decides it: as a whole, by
// the workload check the validating webhook makes when it is applied
// (pkg/workloadcheck: denied past a hard limit, warned when pods will wait),
// then pod by pod as its controller creates them, as the identity that
// controller creates pods as (the kind's podCreator), unless
// --as-requester.

// daemonSetCreator is the identity kube-controller-manager's DaemonSet
// controller creates pods as.
var daemonSetCreator = workload.ControllerIdentity("daemon-set-controller")

// workloadVerdict is the workload check's verdict on w in namespace ns
// (nil for a Pod, a ResourceClaim and a DaemonSet, which it does not check).
func (e *Evaluation) workloadVerdict(ctx context.Context, w *manifest.Workload, ns string) (*workloadcheck.Verdict, error) {
	k := e.kindOf(w)
	if k == nil || w.Replicas == manifest.PerNode || len(w.Object) == 0 {
		return nil, nil
	}
	obj, err := workload.Decode(w.Object)
	if err != nil {
		return nil, err
	}
	name := objectName(obj, w.Name)
	sets, err := k.PodSets(obj)
	if err != nil {
		return &workloadcheck.Verdict{Denials: []string{fmt.Sprintf("gpuadmit: %s %s/%s: %v", w.Kind, ns, name, err)}}, nil
	}
	for i := range sets {
		sets[i].Pod.Namespace = ns
	}
	warn := *e.Setup.Cfg.Workloads.Enforcement == v1alpha1.WorkloadEnforcementWarn
	c := &workloadcheck.Checker{Fit: e.decider, Warn: warn}
	v, err := c.Check(ctx, workloadcheck.Request{New: &workloadcheck.Workload{Kind: w.Kind, Namespace: ns, Name: name, Sets: sets},
		Pending: e.reserved[ns]})
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// kindOf is the workload kind of w (nil for a Pod or a ResourceClaim).
func (e *Evaluation) kindOf(w *manifest.Workload) *workload.Kind {
	if w.APIVersion == "" || e.kinds == nil {
		return nil
	}
	group, version, ok := strings.Cut(w.APIVersion, "/")
	if !ok {
		group, version = "", w.APIVersion
	}
	return e.kinds.Lookup(group, version, w.Kind)
}

// podUser is who w's pods are decided as: the identity its controller
// creates them as, else (a Pod, --as-requester, a kind with no
// podCreator) the requesting user.
func (e *Evaluation) podUser(w *manifest.Workload) decision.UserInfo {
	if e.PodsAsRequester || w.APIVersion == "" {
		return *e.User
	}
	id := daemonSetCreator
	if w.Kind != "DaemonSet" {
		k := e.kindOf(w)
		if k == nil || k.PodCreator.Username == "" {
			return *e.User
		}
		id = k.PodCreator
	}
	return decision.UserInfo{Username: id.Username, Groups: append([]string(nil), id.Groups...)}
}

// loadKinds reads the configuration's workload kinds.
func (e *Evaluation) loadKinds() error {
	kinds, err := config.WorkloadKinds(e.Setup.Cfg)
	if err != nil {
		return fmt.Errorf("workloads: %w", err)
	}
	e.kinds = kinds
	return nil
}

// withVerdict merges the workload's verdict into o: its denials first,
// then its warnings before the pods'.
func withVerdict(o evalObject, v *workloadcheck.Verdict) evalObject {
	if v == nil {
		return o
	}
	if !v.Allowed {
		o.Allowed = false
		o.Denials = append(append([]string{}, v.Denials...), o.Denials...)
	}
	o.Warnings = append(append([]string{}, v.Warnings...), o.Warnings...)
	return o
}

// expandCustom turns each object of objs.Other whose kind the
// configuration's workloads.kinds reads into workloads, one per pod set
// (named after the object, and the set's template when it has several),
// in input order after the others; the verdict on the whole object is
// made once, with its first set. An object whose pod sets cannot be read
// is an error of the run.
func (e *Evaluation) expandCustom(objs *manifest.Objects) {
	for _, o := range objs.Other {
		k := e.kindOf(o)
		if k == nil || workload.IsBuiltin(k.Group, k.Kind) {
			continue
		}
		obj, err := workload.Decode(o.Object)
		var sets []workload.PodSet
		if err == nil {
			sets, err = k.PodSets(obj)
		}
		if err != nil {
			e.expandErrs = append(e.expandErrs, fmt.Errorf("%s (%s %s): %w", o.Source, o.Kind, o.Name, err))
			continue
		}
		for i, s := range sets {
			w := &manifest.Workload{Kind: o.Kind, APIVersion: o.APIVersion, Name: o.Name, Namespace: o.Namespace, Replicas: s.Count,
				Pod: s.Pod, Source: o.Source}
			if len(sets) > 1 {
				w.Name = o.Name + " " + s.Name
			}
			if i == 0 {
				w.Object = o.Object
			}
			objs.Workloads = append(objs.Workloads, w)
		}
	}
}

// objectName is obj's metadata.name, else def.
func objectName(obj map[string]any, def string) string {
	meta, _ := obj["metadata"].(map[string]any)
	if n, _ := meta["name"].(string); n != "" {
		return n
	}
	return def
}
