package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Objects are the objects gpuadmit reads from a manifest, in input order.
type Objects struct {
	Pods   []*corev1.Pod
	Nodes  []*corev1.Node
	Quotas []*corev1.ResourceQuota
	// Namespaces give the policies their labels (input.namespaceLabels).
	Namespaces []*corev1.Namespace
	// Claims, ClaimTemplates and Slices are the resource.k8s.io/v1
	// ResourceClaims, ResourceClaimTemplates and ResourceSlices (Dynamic
	// Resource Allocation): what a claim asks for, the claims a pod's
	// templates make, the devices drivers publish.
	Claims         []*resourcev1.ResourceClaim
	ClaimTemplates []*resourcev1.ResourceClaimTemplate
	Slices         []*resourcev1.ResourceSlice
	// DeviceClasses are the resource.k8s.io/v1 DeviceClasses, as read: which
	// classes gpuadmit governs, and how, is its configuration's (dra
	// section), whether or not the manifests hold them.
	DeviceClasses []*resourcev1.DeviceClass
	// Workloads are the Pods, the pod templates of workload controllers
	// (Deployments, StatefulSets, ReplicaSets, DaemonSets, Jobs, CronJobs)
	// and the ResourceClaims, in input order: what `gpuadmit effective` and
	// `eval` evaluate.
	Workloads []*Workload
	// Skipped counts objects of other kinds.
	Skipped int
	// Other are those objects (Pod nil): a command that reads custom
	// workload kinds (gpuadmit eval, through the configuration's
	// workloads.kinds) finds theirs here.
	Other []*Workload
}

// ReadFile reads a manifest file; "-" reads standard input.
func ReadFile(path string, stdin io.Reader) (*Objects, error) {
	var (
		objs *Objects
		err  error
		name = path
	)
	if path == "-" {
		name = "standard input"
		objs, err = Read(stdin)
	} else {
		var f *os.File
		if f, err = os.Open(path); err != nil {
			return nil, err
		}
		defer f.Close()
		if objs, err = Read(f); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if err != nil {
		return nil, err
	}
	for _, w := range append(slices.Clone(objs.Workloads), objs.Other...) {
		w.Source = fmt.Sprintf("%s (%s)", name, w.Source)
	}
	return objs, nil
}

type header struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Items      []json.RawMessage `json:"items"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
}

// Read decodes every document of r.
func Read(r io.Reader) (*Objects, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(r, 64*1024)
	out := &Objects{}
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: not valid YAML or JSON: %w", doc, err)
		}
		if t := bytes.TrimSpace(raw); len(t) == 0 || string(t) == "null" {
			continue
		}
		if err := out.add(raw, fmt.Sprintf("document %d", doc)); err != nil {
			return nil, err
		}
	}
}

// add adds the object (or, for a List, every item) of raw, read at where.
func (o *Objects) add(raw json.RawMessage, where string) error {
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		return fmt.Errorf("not a Kubernetes object (%s): %s", where, notAnObject(raw, err))
	}
	if h.Kind == "" {
		return fmt.Errorf("not a Kubernetes object (%s): missing \"kind\"", where)
	}
	if strings.HasSuffix(h.Kind, "List") && h.Items != nil {
		return o.addItems(h, where)
	}
	n, other := len(o.Workloads), len(o.Other)
	if err := o.addObject(raw, h); err != nil {
		return fmt.Errorf("%s (%s %s): %w", where, h.Kind, name(h.Metadata.Namespace, h.Metadata.Name), err)
	}
	for _, w := range append(o.Workloads[n:], o.Other[other:]...) {
		w.Source = where
	}
	return nil
}

// notAnObject says what raw, which does not decode as an object with a
// kind, is instead: a text, a list, a number, or what decoding says.
func notAnObject(raw json.RawMessage, err error) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return err.Error()
	}
	what := map[byte]string{'"': "a text", '[': "a list", 't': "a boolean", 'f': "a boolean"}[raw[0]]
	if what == "" && (raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9') {
		what = "a number"
	}
	if what == "" {
		return err.Error()
	}
	return what + ", not an object with apiVersion, kind and metadata (is it a Kubernetes manifest?)"
}

// addItems adds every item of the List h, read at where.
func (o *Objects) addItems(h header, where string) error {
	for i, item := range h.Items {
		if err := o.add(item, fmt.Sprintf("%s, %s item %d", where, h.Kind, i)); err != nil {
			return err
		}
	}
	return nil
}

// addObject decodes raw, an object of the kind h names, into the list of
// its kind; objects of other kinds are counted as skipped.
func (o *Objects) addObject(raw json.RawMessage, h header) error {
	switch {
	case h.APIVersion == "v1":
		return o.addCore(raw, h.Kind)
	case workloadKind(h.APIVersion, h.Kind):
		w, err := workloadOf(raw, h)
		if err != nil {
			return err
		}
		o.Workloads = append(o.Workloads, w)
	case draKind(h.APIVersion, h.Kind):
		return o.addDRA(raw, h)
	default:
		o.Skipped++
		o.Other = append(o.Other, &Workload{Kind: h.Kind, APIVersion: h.APIVersion, Name: h.Metadata.Name, Namespace: h.Metadata.Namespace, Object: raw})
	}
	return nil
}

// addCore adds an object of the core group (apiVersion v1).
func (o *Objects) addCore(raw json.RawMessage, kind string) error {
	switch kind {
	case "Pod":
		return o.addPod(raw)
	case "Node":
		return appendDecoded(raw, &o.Nodes)
	case "ResourceQuota":
		return appendDecoded(raw, &o.Quotas)
	case "Namespace":
		return appendDecoded(raw, &o.Namespaces)
	}
	o.Skipped++
	return nil
}

// addPod adds the Pod of raw to the pods and, as a workload of one replica,
// to the workloads.
func (o *Objects) addPod(raw json.RawMessage) error {
	w, err := podOf(raw)
	if err != nil {
		return err
	}
	w.Kind, w.Name, w.Namespace, w.Replicas = "Pod", w.Pod.Name, w.Pod.Namespace, 1
	o.Pods = append(o.Pods, w.Pod)
	o.Workloads = append(o.Workloads, w)
	return nil
}

// appendDecoded decodes raw into a new T and appends it to list.
func appendDecoded[T any](raw json.RawMessage, list *[]*T) error {
	v := new(T)
	if err := json.Unmarshal(raw, v); err != nil {
		return err
	}
	*list = append(*list, v)
	return nil
}

func name(ns, n string) string {
	if ns == "" {
		return n
	}
	return ns + "/" + n
}

// podOf decodes a Pod, keeping its container quantities as written.
func podOf(raw json.RawMessage) (*Workload, error) {
	written, err := checkPodQuantities(raw)
	if err != nil {
		return nil, err
	}
	p := &corev1.Pod{}
	if err := json.Unmarshal(raw, p); err != nil {
		return nil, err
	}
	return &Workload{Pod: p, written: written}, nil
}

// checkPodQuantities validates container resource quantities before typed
// decoding, so that a bad value is reported with its container and resource
// instead of as a bare quantity syntax error, and returns every quantity as
// the manifest wrote it (surrounding blanks are ignored, as the API server
// ignores them).
func checkPodQuantities(raw json.RawMessage) (map[quantityKey]string, error) {
	var p struct {
		Spec struct {
			InitContainers []rawContainer `json:"initContainers"`
			Containers     []rawContainer `json:"containers"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, nil // malformed shape: the typed decode reports it with the field path
	}
	written := map[quantityKey]string{}
	for _, list := range [][]rawContainer{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			for _, part := range []struct {
				field string
				vals  map[string]json.RawMessage
			}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
				for res, v := range part.vals {
					s := asWritten(v)
					if _, err := resource.ParseQuantity(s); err != nil {
						return nil, fmt.Errorf("container %q: resources.%s[%q] %s: not a quantity (%w)", c.Name, part.field, res, v, err)
					}
					written[quantityKey{c.Name, part.field, res}] = s
				}
			}
		}
	}
	return written, nil
}

// asWritten is a quantity as the manifest wrote it: a JSON string's text or
// a number, surrounding blanks ignored (as the API server ignores them).
func asWritten(v json.RawMessage) string {
	return strings.TrimSpace(strings.Trim(string(bytes.TrimSpace(v)), `"`))
}

type rawContainer struct {
	Name      string `json:"name"`
	Resources struct {
		Limits   map[string]json.RawMessage `json:"limits"`
		Requests map[string]json.RawMessage `json:"requests"`
	} `json:"resources"`
}
