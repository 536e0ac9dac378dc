package workload

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// PodSet is one pod template of a workload and the pods made of it.
type PodSet struct {
	// Name is where the template is (spec.template;
	// spec.replicatedJobs[0].template.spec.template).
	Name string
	// Pod is a pod made from the template: named after the workload, in
	// its namespace.
	Pod *corev1.Pod
	// Template is the pod as JSON (apiVersion v1, kind Pod, the template's
	// metadata and spec), for readers that keep quantities as written.
	Template json.RawMessage
	// Count is the number of pods: the product of the template's factors.
	Count int64
}

// CountError is a pod count that cannot be read: negative, not a whole
// number, or a product past 64 bits. A workload with one is refused, never
// read as 0.
type CountError struct {
	Where  string
	Reason string
}

func (e *CountError) Error() string { return fmt.Sprintf("%s: %s", e.Where, e.Reason) }

// MaxPodSets bounds the pod templates of one workload: each is decided
// on its own, and no controller makes more (a JobSet's replicated jobs
// are bounded far below it).
const MaxPodSets = 1000

// PodSets reads the pod sets of obj, an object of kind k decoded by
// Decode. A template path that matches nothing is a template the object
// does not have; a count path that matches nothing counts its default.
func (k *Kind) PodSets(obj map[string]any) ([]PodSet, error) {
	name, ns := metaString(obj, "name"), metaString(obj, "namespace")
	var out []PodSet
	for i := range k.Templates {
		t := &k.Templates[i]
		ms := t.Path.find(obj)
		if len(ms) == 0 && !t.Fallback.IsZero() {
			ms = t.Fallback.find(obj)
			for i := range ms { // a distinct name: the fallback's own set has its path
				ms[i].where += " (for " + t.Path.String() + ")"
			}
		}
		if len(out)+len(ms) > MaxPodSets {
			return nil, &CountError{Where: t.Path.String(), Reason: fmt.Sprintf("more than %d pod templates", MaxPodSets)}
		}
		for _, m := range ms {
			count, err := t.count(obj, m.indexes)
			if err != nil {
				return nil, err
			}
			pod, raw, err := podOf(m.value, name, ns)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", m.where, err)
			}
			out = append(out, PodSet{Name: m.where, Pod: pod, Template: raw, Count: count})
		}
	}
	return out, nil
}

// count multiplies the template's factors at the template's indexes.
func (t *Template) count(obj map[string]any, indexes []string) (int64, error) {
	total := int64(1)
	for _, f := range t.Replicas {
		n, where, err := f.read(obj, indexes)
		if err != nil {
			return 0, err
		}
		if n != 0 && total > math.MaxInt64/n {
			return 0, &CountError{Where: where, Reason: fmt.Sprintf("the pod count (%d x %d) does not fit in 64 bits", total, n)}
		}
		total *= n
	}
	return total, nil
}

// read is the factor's count: the value at its path (a whole number, not
// negative), else its default, plus its offset.
func (f *Factor) read(obj map[string]any, indexes []string) (int64, string, error) {
	v, where, ok := f.Path.at(obj, indexes)
	n := f.Default
	if !ok {
		where = f.Path.String()
	} else {
		var err error
		if n, err = wholeNumber(v); err != nil {
			return 0, where, &CountError{Where: where, Reason: err.Error()}
		}
	}
	if n < 0 {
		return 0, where, &CountError{Where: where, Reason: fmt.Sprintf("negative count %d", n)}
	}
	n, err := f.bounded(obj, indexes, n)
	if err != nil {
		return 0, where, err
	}
	if f.Offset != 0 {
		if (f.Offset > 0 && n > math.MaxInt64-f.Offset) || n+f.Offset < 0 {
			return 0, where, &CountError{Where: where, Reason: fmt.Sprintf("count %d%+d is out of range", n, f.Offset)}
		}
		n += f.Offset
	}
	return n, where, nil
}

// bounded applies the factor's bounds to n: raised to the value at
// AtLeast, then lowered to the value at AtMost, where the object has them
// (KubeRay's clamp of a worker group's replicas to [minReplicas,
// maxReplicas], maxReplicas winning when below minReplicas). A lower
// bound that is no count is an error (never read as no bound: that would
// count fewer pods than run); an upper bound that is no count is ignored
// (the count stays the higher one).
func (f *Factor) bounded(obj map[string]any, indexes []string, n int64) (int64, error) {
	if !f.AtLeast.IsZero() {
		if v, where, ok := f.AtLeast.at(obj, indexes); ok {
			bound, err := wholeNumber(v)
			if err == nil && bound < 0 {
				err = fmt.Errorf("negative count %d", bound)
			}
			if err != nil {
				return 0, &CountError{Where: where, Reason: err.Error()}
			}
			n = max(n, bound)
		}
	}
	if !f.AtMost.IsZero() {
		if c, _, ok := f.AtMost.at(obj, indexes); ok {
			if bound, err := wholeNumber(c); err == nil && bound >= 0 {
				n = min(n, bound)
			}
		}
	}
	return n, nil
}

// wholeNumber reads a count: an integer JSON number (json.Number, or an
// int64 or whole float64 of an object decoded otherwise).
func wholeNumber(v any) (int64, error) {
	switch n := v.(type) {
	case json.Number:
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s is not a whole number of pods", n)
		}
		return i, nil
	case int64:
		return n, nil
	case int:
		return int64(n), nil
	case float64:
		if n != math.Trunc(n) || n > math.MaxInt64/2 || n < math.MinInt64/2 {
			return 0, fmt.Errorf("%v is not a whole number of pods", n)
		}
		return int64(n), nil
	}
	return 0, fmt.Errorf("%v (%T) is not a number", v, v)
}

// podOf builds the Pod of a template (an object with metadata and spec).
func podOf(tmpl any, name, ns string) (*corev1.Pod, json.RawMessage, error) {
	t, ok := tmpl.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("the pod template is not an object")
	}
	spec, ok := t["spec"].(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("the pod template has no spec")
	}
	meta, _ := t["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	raw, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
	if err != nil {
		return nil, nil, fmt.Errorf("the pod template: %w", err)
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(raw, pod); err != nil {
		return nil, nil, fmt.Errorf("the pod template: %w", err)
	}
	pod.Name, pod.Namespace, pod.GenerateName = name, ns, ""
	return pod, raw, nil
}

func metaString(obj map[string]any, field string) string {
	meta, _ := obj["metadata"].(map[string]any)
	s, _ := meta[field].(string)
	return s
}

// SetScale writes replicas at the kind's scale path in obj (a copy of the
// object read, for a scale review), or says the kind has none.
func (k *Kind) SetScale(obj map[string]any, replicas int64) error {
	if k.ScalePath.IsZero() {
		return fmt.Errorf("%s has no scale path", k.GVK())
	}
	cur := obj
	steps := k.ScalePath.steps
	for _, s := range steps[:len(steps)-1] {
		next, ok := cur[s.field].(map[string]any)
		if !ok {
			next = map[string]any{}
			cur[s.field] = next
		}
		cur = next
	}
	cur[steps[len(steps)-1].field] = json.Number(strconv.FormatInt(replicas, 10))
	return nil
}
