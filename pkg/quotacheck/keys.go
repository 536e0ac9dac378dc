package quotacheck

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// LimitsPrefix is the prefix of the spec.hard keys HAMi and gpuadmit
// limit devices with (Kubernetes itself limits only requests.<name> of an
// extended resource).
const LimitsPrefix = "limits."

// Finding is one spec.hard key of a ResourceQuota that gpuadmit does not
// enforce.
type Finding struct {
	Key     string
	Value   string
	Message string
}

// Kept reports whether a spec.hard key may concern gpuadmit: the keys of
// the governed families (requests. and limits.) and every limits. key of
// an extended resource (a name with a domain), which Ungoverned reads. The
// informer's transform keeps those alone.
func Kept(key corev1.ResourceName, governed []effective.Family) bool {
	rest, ok := strings.CutPrefix(string(key), LimitsPrefix)
	if !ok {
		rest, ok = strings.CutPrefix(string(key), "requests.")
	}
	if !ok {
		return false
	}
	if _, managed := effective.ManagedBy(governed, corev1.ResourceName(rest)); managed {
		return true
	}
	return strings.HasPrefix(string(key), LimitsPrefix) && extended(rest)
}

// Ungoverned lists, by key, the limits. keys of hard that no governed
// family enforces and that look like a device limit: a resource of a
// device family gpuadmit knows but does not govern (its section is not in
// the configuration), a governed family's memory percentage (neither
// gpuadmit nor HAMi limits it), or any other extended resource (a name
// with a domain outside kubernetes.io). Kubernetes enforces no limits. key
// of an extended resource, so each is a limit nothing enforces.
func Ungoverned(hard corev1.ResourceList, governed []effective.Family) []Finding {
	var out []Finding
	for key, v := range hard {
		res, ok := strings.CutPrefix(string(key), LimitsPrefix)
		if !ok || !extended(res) {
			continue
		}
		if msg := ungoverned(corev1.ResourceName(res), governed); msg != "" {
			out = append(out, Finding{Key: string(key), Value: Written(v), Message: msg})
		}
	}
	slices.SortFunc(out, func(a, b Finding) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// ungoverned says why gpuadmit does not enforce a limit on res ("" when a
// governed family does).
func ungoverned(res corev1.ResourceName, governed []effective.Family) string {
	const not = "not enforced by gpuadmit (nor by Kubernetes, which limits only requests. of an extended resource)"
	for i := range governed {
		n := governed[i].Names
		switch res {
		case n.Count, n.Memory, n.Cores:
			return ""
		case n.MemoryPercentage:
			return fmt.Sprintf("a memory percentage is %s: limit %s instead", not, LimitsPrefix+string(n.Memory))
		}
	}
	if f := known(res); f != nil {
		return fmt.Sprintf("a resource of the %s device family, which gpuadmit does not govern (no %s section in its configuration, or its section switched off: devices.ascend.enabled, devices.iluvatar.enabled): %s",
			f.Name, section(f), not)
	}
	if f := vendor(res, governed); f != nil {
		return fmt.Sprintf("not a resource of the %s device family as configured (a misspelt or renamed name?): %s", f.Name, not)
	}
	return fmt.Sprintf("no device family gpuadmit governs has this resource: %s", not)
}

// vendor is the first governed family, then known family, whose resources
// share res's domain (nil: none).
func vendor(res corev1.ResourceName, governed []effective.Family) *effective.Family {
	domain, _, _ := strings.Cut(string(res), "/")
	for _, fams := range [][]effective.Family{governed, append(effective.HAMiFamilies(), effective.Gpushare())} {
		for i := range fams {
			if d, _, _ := strings.Cut(string(fams[i].Names.Count), "/"); d == domain {
				return &fams[i]
			}
		}
	}
	return nil
}

// known is the family of every family gpuadmit knows (HAMi's backends and
// gpushare, with their default names) that has res (nil: none).
func known(res corev1.ResourceName) *effective.Family {
	fams := append(effective.HAMiFamilies(), effective.Gpushare())
	for i := range fams {
		n := fams[i].Names
		if res == n.Count || res == n.Memory || res == n.MemoryPercentage || res == n.Cores {
			return &fams[i]
		}
	}
	return nil
}

func section(f *effective.Family) string {
	if f.Section != "" {
		s, _, _ := strings.Cut(f.Section, "[")
		return s
	}
	return f.Name
}

// extended reports whether res is an extended resource: a name with a
// domain, other than Kubernetes' own (kubernetes.io and its subdomains).
func extended(res string) bool {
	domain, _, ok := strings.Cut(res, "/")
	if !ok {
		return false
	}
	return domain != "kubernetes.io" && !strings.HasSuffix(domain, ".kubernetes.io")
}
