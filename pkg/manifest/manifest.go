// Package manifest reads Kubernetes manifests the way kubectl prints them:
// YAML or JSON, a single object, a List, or a multi-document stream. It keeps
// the Pods, Nodes and ResourceQuotas and explains precisely what is wrong with
// input it cannot read (document number, object, container, field, value).
package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Objects are the objects gpuadmit reads from a manifest, in input order.
type Objects struct {
	Pods   []*corev1.Pod
	Nodes  []*corev1.Node
	Quotas []*corev1.ResourceQuota
	// Skipped counts objects of other kinds.
	Skipped int
}

// ReadFile reads a manifest file; "-" reads standard input.
func ReadFile(path string, stdin io.Reader) (*Objects, error) {
	if path == "-" {
		return Read(stdin)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	objs, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
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

func (o *Objects) add(raw json.RawMessage, where string) error {
	var h header
	if err := json.Unmarshal(raw, &h); err != nil {
		return fmt.Errorf("%s: not a Kubernetes object: %w", where, err)
	}
	if h.Kind == "" {
		return fmt.Errorf("%s: not a Kubernetes object: missing \"kind\"", where)
	}
	if strings.HasSuffix(h.Kind, "List") && h.Items != nil {
		for i, item := range h.Items {
			if err := o.add(item, fmt.Sprintf("%s, %s item %d", where, h.Kind, i)); err != nil {
				return err
			}
		}
		return nil
	}
	id := fmt.Sprintf("%s (%s %s)", where, h.Kind, name(h.Metadata.Namespace, h.Metadata.Name))
	core := h.APIVersion == "v1"
	switch {
	case core && h.Kind == "Pod":
		if err := checkPodQuantities(raw); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		p := &corev1.Pod{}
		if err := json.Unmarshal(raw, p); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		o.Pods = append(o.Pods, p)
	case core && h.Kind == "Node":
		n := &corev1.Node{}
		if err := json.Unmarshal(raw, n); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		o.Nodes = append(o.Nodes, n)
	case core && h.Kind == "ResourceQuota":
		q := &corev1.ResourceQuota{}
		if err := json.Unmarshal(raw, q); err != nil {
			return fmt.Errorf("%s: %w", id, err)
		}
		o.Quotas = append(o.Quotas, q)
	default:
		o.Skipped++
	}
	return nil
}

func name(ns, n string) string {
	if ns == "" {
		return n
	}
	return ns + "/" + n
}

// checkPodQuantities validates container resource quantities before typed
// decoding, so that a bad value is reported with its container and resource
// instead of as a bare quantity syntax error.
func checkPodQuantities(raw json.RawMessage) error {
	var p struct {
		Spec struct {
			InitContainers []rawContainer `json:"initContainers"`
			Containers     []rawContainer `json:"containers"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil // malformed shape: the typed decode reports it with the field path
	}
	for _, list := range [][]rawContainer{p.Spec.InitContainers, p.Spec.Containers} {
		for _, c := range list {
			for _, part := range []struct {
				field string
				vals  map[string]json.RawMessage
			}{{"limits", c.Resources.Limits}, {"requests", c.Resources.Requests}} {
				for res, v := range part.vals {
					s := strings.Trim(string(bytes.TrimSpace(v)), `"`)
					if _, err := resource.ParseQuantity(s); err != nil {
						return fmt.Errorf("container %q: resources.%s[%q] %s: not a quantity (%v)", c.Name, part.field, res, v, err)
					}
				}
			}
		}
	}
	return nil
}

type rawContainer struct {
	Name      string `json:"name"`
	Resources struct {
		Limits   map[string]json.RawMessage `json:"limits"`
		Requests map[string]json.RawMessage `json:"requests"`
	} `json:"resources"`
}
