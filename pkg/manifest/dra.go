package manifest

import (
	"encoding/json"
	"fmt"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The Dynamic Resource Allocation kinds read, of resource.k8s.io/v1 only:
// the version a cluster serving DRA by default (Kubernetes 1.34 on)
// serves, and the one the webhook and the ledger read. An object of
// another version of these kinds is an error naming its apiVersion rather
// than a claim silently not counted.
const (
	draGroup = resourcev1.GroupName
	draV1    = draGroup + "/v1"
)

// draResource is the resource name (kubectl's) of a DRA kind read; ""
// for any other kind.
func draResource(kind string) string {
	switch kind {
	case "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice":
		return strings.ToLower(kind) + "s"
	case "DeviceClass":
		return "deviceclasses"
	}
	return ""
}

// draKind reports the DRA kinds read, of any version of resource.k8s.io.
func draKind(apiVersion, kind string) bool {
	group, _, _ := strings.Cut(apiVersion, "/")
	return group == draGroup && draResource(kind) != ""
}

// addDRA adds a resource.k8s.io object of the kind h names; any version
// but v1 is an error.
func (o *Objects) addDRA(raw json.RawMessage, h header) error {
	if h.APIVersion != draV1 {
		return fmt.Errorf("apiVersion %s is not read: gpuadmit reads the %s of %s only (kubectl get %s.v1.%s -o yaml writes that version)",
			h.APIVersion, h.Kind, draV1, draResource(h.Kind), draGroup)
	}
	switch h.Kind {
	case "ResourceClaim":
		return o.addClaim(raw)
	case "ResourceClaimTemplate":
		var t struct {
			Spec struct {
				Spec rawClaimSpec `json:"spec"`
			} `json:"spec"`
		}
		if err := checkClaimQuantities(raw, &t, &t.Spec.Spec); err != nil {
			return err
		}
		return appendDecoded(raw, &o.ClaimTemplates)
	case "ResourceSlice":
		return appendDecoded(raw, &o.Slices)
	default: // DeviceClass
		return appendDecoded(raw, &o.DeviceClasses)
	}
}

// addClaim adds the ResourceClaim of raw to the claims and to the
// workloads (one claim: Replicas 1, no Pod).
func (o *Objects) addClaim(raw json.RawMessage) error {
	var shape struct {
		Spec rawClaimSpec `json:"spec"`
	}
	if err := checkClaimQuantities(raw, &shape, &shape.Spec); err != nil {
		return err
	}
	c := &resourcev1.ResourceClaim{}
	if err := json.Unmarshal(raw, c); err != nil {
		return err
	}
	o.Claims = append(o.Claims, c)
	o.Workloads = append(o.Workloads, &Workload{Kind: "ResourceClaim", Name: c.Name, Namespace: c.Namespace, Replicas: 1, Claim: c})
	return nil
}

// rawClaimSpec is the part of a ResourceClaimSpec holding quantities.
type rawClaimSpec struct {
	Devices struct {
		Requests []struct {
			Name           string   `json:"name"`
			Exactly        *rawAsk  `json:"exactly"`
			FirstAvailable []rawAsk `json:"firstAvailable"`
		} `json:"requests"`
	} `json:"devices"`
}

// rawAsk is an exactly or a firstAvailable subrequest: its name (a
// subrequest's) and capacity.requests.
type rawAsk struct {
	Name     string `json:"name"`
	Capacity struct {
		Requests map[string]json.RawMessage `json:"requests"`
	} `json:"capacity"`
}

// checkClaimQuantities validates the capacity.requests quantities of the
// claim spec spec, which shape (holding it) is decoded from raw, before
// typed decoding, so that a bad value is reported with its request and
// capacity instead of as a bare quantity syntax error.
func checkClaimQuantities(raw json.RawMessage, shape any, spec *rawClaimSpec) error {
	if err := json.Unmarshal(raw, shape); err != nil {
		return nil // malformed shape: the typed decode reports it with the field path
	}
	for _, r := range spec.Devices.Requests {
		if r.Exactly != nil {
			if err := checkCapacity(r.Name, r.Exactly); err != nil {
				return err
			}
		}
		for i := range r.FirstAvailable {
			if err := checkCapacity(r.Name+"/"+r.FirstAvailable[i].Name, &r.FirstAvailable[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkCapacity validates one request's capacity.requests.
func checkCapacity(request string, a *rawAsk) error {
	for name, v := range a.Capacity.Requests {
		if _, err := resource.ParseQuantity(asWritten(v)); err != nil {
			return fmt.Errorf("request %q: capacity.requests[%q] %s: not a quantity (%w)", request, name, v, err)
		}
	}
	return nil
}
