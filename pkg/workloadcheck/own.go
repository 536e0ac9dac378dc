package workloadcheck

import (
	"strings"

	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// OwnCharge is what a workload's existing pods are charged, among the
// namespace's charges: the ledger records pods by name, not by owner, so a
// pod is the workload's when its name is one its controller gives: the
// workload's name, a dash, then for a Deployment its ReplicaSet's
// pod-template hash and the ReplicaSet's random suffix, for a ReplicaSet
// the suffix, for a StatefulSet the ordinal, for a Job the suffix (after
// the completion index of an indexed Job). So Deployment "a" does not
// count Deployment "a-b"'s pods. Other kinds (CronJobs, custom kinds),
// and names long enough for the API server to have cut the generated
// name's prefix, count every pod named "<workload>-…". A pod of another
// workload named the same way is still counted: that only lowers the
// "pods will wait" warning's count; the hard-limit check reads no usage.
func OwnCharge(charges []ledger.Charge, kind, name string) effective.Usage {
	own := effective.Usage{}
	for _, c := range charges {
		if c.Kind != ledger.ChargePod || c.State == effective.StateZero || !ownedName(kind, name, c.Name) {
			continue
		}
		if sum, ok := own.Add(c.Used); ok {
			own = sum
		}
	}
	return own
}

// maxPrefix is the longest generateName prefix the API server keeps
// whole (63 characters less its 5 random ones).
const maxPrefix = 58

// suffixAlphabet is what the API server's random suffixes and a
// Deployment's pod-template hash are made of.
const suffixAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// ownedName reports whether pod is a name kind's controller gives a pod
// of the workload name.
func ownedName(kind, name, pod string) bool {
	rest, ok := strings.CutPrefix(pod, name+"-")
	if !ok {
		return false
	}
	generated := kind == "Deployment" || kind == "ReplicaSet" || kind == "Job"
	if generated && len(pod) == maxPrefix+5 {
		return true // the prefix may have been cut: as much as can be told
	}
	switch kind {
	case "Deployment":
		return deploymentPod(rest)
	case "ReplicaSet":
		return randomSuffix(rest)
	case "StatefulSet":
		return ordinal(rest)
	case "Job":
		if index, suffix, ok := strings.Cut(rest, "-"); ok {
			return ordinal(index) && randomSuffix(suffix)
		}
		return randomSuffix(rest)
	}
	return true
}

// deploymentPod: rest is a pod-template hash (1 to 10 characters, its
// uint32 hash's decimal digits encoded) and a random suffix.
func deploymentPod(rest string) bool {
	hash, suffix, ok := strings.Cut(rest, "-")
	return ok && len(hash) >= 1 && len(hash) <= 10 && only(hash, suffixAlphabet) && randomSuffix(suffix)
}

func randomSuffix(s string) bool { return len(s) == 5 && only(s, suffixAlphabet) }

// ordinal is a StatefulSet's ordinal or a Job's completion index: a
// decimal number without leading zeros.
func ordinal(s string) bool {
	return s != "" && only(s, "0123456789") && (s == "0" || s[0] != '0')
}

func only(s, alphabet string) bool {
	for _, r := range s {
		if !strings.ContainsRune(alphabet, r) {
			return false
		}
	}
	return true
}
