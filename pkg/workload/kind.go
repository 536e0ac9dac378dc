package workload

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Kind says where the pod templates of one kind of workload are, and how
// many pods each makes.
type Kind struct {
	Group, Version, Kind string
	// Resource is the kind's plural resource name (deployments): the
	// resource a scale review names.
	Resource  string
	Templates []Template
	// ScalePath is where the scale subresource's replicas are written
	// (spec.replicas of a Deployment); zero: the kind has no scale
	// subresource gpuadmit reads.
	ScalePath Path
	// PodCreator is the identity the kind's controller creates its pods
	// as: the policies read it as input.userInfo when the command line
	// decides the workload's pods.
	PodCreator Identity
}

// Identity is a username and its groups.
type Identity struct {
	Username string
	Groups   []string
}

// Template is one pod template of a kind.
type Template struct {
	// Path is the template (an object with metadata and spec); [*]
	// makes a pod set per item.
	Path Path
	// Fallback, when set, is read where Path matches nothing (a
	// LeaderWorkerSet's leader runs the worker template unless it has
	// its own).
	Fallback Path
	// Replicas multiply into the template's pod count (none: 1).
	Replicas []Factor
}

// Factor is one count of a template's pod count.
type Factor struct {
	Path Path
	// Default is the count where Path matches nothing.
	Default int64
	// Offset is added to the count read (or defaulted): -1 for a
	// LeaderWorkerSet's workers (size counts the leader).
	Offset int64
	// AtLeast, when set, raises the count to the value there when the
	// object has one (a KubeRay worker group runs at least minReplicas
	// pods); applied before AtMost.
	AtLeast Path
	// AtMost, when set, bounds the count by the value there when the
	// object has one: a Job runs at most spec.completions pods at once,
	// whatever its parallelism.
	AtMost Path
}

// GVK names the kind as group/version, Kind (apps/v1, Deployment).
func (k *Kind) GVK() string {
	gv := k.Version
	if k.Group != "" {
		gv = k.Group + "/" + k.Version
	}
	return gv + ", Kind=" + k.Kind
}

// Validate checks that every factor and fallback of k is read at the
// indexes of its template.
func (k *Kind) Validate() error {
	if len(k.Templates) == 0 {
		return fmt.Errorf("%s: no template", k.GVK())
	}
	for i, t := range k.Templates {
		if t.Path.IsZero() {
			return fmt.Errorf("%s: template %d: no path", k.GVK(), i)
		}
		if !t.Fallback.IsZero() && t.Fallback.eachCount() != t.Path.eachCount() {
			return fmt.Errorf("%s: template %d: fallback %q must have as many [*] as %q", k.GVK(), i, t.Fallback, t.Path)
		}
		for _, f := range t.Replicas {
			if err := f.Path.alignedWith(t.Path); err != nil {
				return fmt.Errorf("%s: template %d: replicas: %w", k.GVK(), i, err)
			}
			for _, b := range []Path{f.AtLeast, f.AtMost} {
				if err := b.alignedWith(t.Path); err != nil {
					return fmt.Errorf("%s: template %d: replicas bound: %w", k.GVK(), i, err)
				}
			}
			if f.Default < 0 {
				return fmt.Errorf("%s: template %d: replicas %q: negative default %d", k.GVK(), i, f.Path, f.Default)
			}
		}
	}
	if k.ScalePath.eachCount() > 0 {
		return fmt.Errorf("%s: scale path %q may not have [*]", k.GVK(), k.ScalePath)
	}
	return nil
}

// MustPath parses a path known to be valid (the built-in kinds').
func MustPath(s string) Path {
	p, err := ParsePath(s)
	if err != nil {
		panic(err)
	}
	return p
}

// Controller identities of kube-controller-manager's controllers.
var kcmGroups = []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"}

// ControllerIdentity is kube-controller-manager's service account of the
// named controller (replicaset-controller, job-controller...).
func ControllerIdentity(controller string) Identity {
	return Identity{Username: "system:serviceaccount:kube-system:" + controller, Groups: append([]string(nil), kcmGroups...)}
}

// Builtins are the kinds always known: Deployments, ReplicaSets and
// StatefulSets (spec.replicas, default 1), Jobs (spec.parallelism, default
// 1, at most spec.completions) and CronJobs (the job template's).
func Builtins() []Kind {
	one := func(group, kind, tmpl, count, scale, controller string) Kind {
		k := Kind{Group: group, Version: "v1", Kind: kind, Resource: strings.ToLower(kind) + "s", PodCreator: ControllerIdentity(controller),
			Templates: []Template{{Path: MustPath(tmpl), Replicas: []Factor{{Path: MustPath(count), Default: 1}}}}}
		if scale != "" {
			k.ScalePath = MustPath(scale)
		}
		return k
	}
	job := func(kind, prefix string) Kind {
		k := one("batch", kind, prefix+"template", prefix+"parallelism", "", "job-controller")
		k.Templates[0].Replicas[0].AtMost = MustPath(prefix + "completions")
		return k
	}
	return []Kind{
		one("apps", "Deployment", "spec.template", "spec.replicas", "spec.replicas", "replicaset-controller"),
		one("apps", "ReplicaSet", "spec.template", "spec.replicas", "spec.replicas", "replicaset-controller"),
		one("apps", "StatefulSet", "spec.template", "spec.replicas", "spec.replicas", "statefulset-controller"),
		job("Job", "spec."),
		job("CronJob", "spec.jobTemplate.spec."),
	}
}

// IsBuiltin reports whether group/kind is a built-in kind.
func IsBuiltin(group, kind string) bool {
	for _, b := range Builtins() {
		if b.Group == group && b.Kind == kind {
			return true
		}
	}
	return false
}

// Kinds looks kinds up by group, version and kind.
type Kinds struct {
	byGVK map[string]*Kind
}

// NewKinds returns the built-in kinds and extra (which may only change a
// built-in kind's PodCreator: an entry for a built-in kind with templates
// is an error).
func NewKinds(extra []Kind) (*Kinds, error) {
	ks := &Kinds{byGVK: map[string]*Kind{}}
	for _, b := range Builtins() {
		ks.byGVK[key(b.Group, b.Version, b.Kind)] = &b
	}
	for i := range extra {
		k := extra[i]
		if b, ok := ks.byGVK[key(k.Group, k.Version, k.Kind)]; ok && IsBuiltin(k.Group, k.Kind) {
			if len(k.Templates) > 0 {
				return nil, fmt.Errorf("%s is built in: its templates cannot be configured (only its podCreator)", k.GVK())
			}
			if k.PodCreator.Username != "" {
				b.PodCreator = k.PodCreator
			}
			continue
		}
		if err := k.Validate(); err != nil {
			return nil, err
		}
		if _, dup := ks.byGVK[key(k.Group, k.Version, k.Kind)]; dup {
			return nil, fmt.Errorf("%s is listed twice", k.GVK())
		}
		ks.byGVK[key(k.Group, k.Version, k.Kind)] = &k
	}
	return ks, nil
}

func key(group, version, kind string) string { return group + "/" + version + "/" + kind }

// Lookup returns the kind of group, version and kind (nil when unknown).
func (ks *Kinds) Lookup(group, version, kind string) *Kind {
	if ks == nil {
		return nil
	}
	return ks.byGVK[key(group, version, kind)]
}

// Each calls f with every kind.
func (ks *Kinds) Each(f func(*Kind)) {
	for _, k := range ks.byGVK {
		f(k)
	}
}

// Decode reads a JSON object keeping numbers exact (a count is read as an
// integer, never through a float).
func Decode(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, fmt.Errorf("decoding the object: %w", err)
	}
	if obj == nil {
		return nil, fmt.Errorf("decoding the object: not an object")
	}
	return obj, nil
}
