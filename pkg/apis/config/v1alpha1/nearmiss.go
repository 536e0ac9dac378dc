package v1alpha1

import (
	"fmt"
	"slices"
)

// A key of the devices section that gpuadmit does not read is HAMi's, and
// ignored with a warning, unless it is within two edits of a key
// gpuadmit reads in the same place: then it is a misspelling of a key that
// decides a charge (memoryFactr: 1024 would charge a 20 GiB pod 20 MiB),
// and an error that names the key meant.

// maxEdits is the most edits (insertions, deletions, substitutions,
// transpositions of two adjacent characters) between a misspelt key and
// the key meant.
const maxEdits = 2

// hamiKeys are the keys of HAMi's device config that gpuadmit does not
// read, in any section (its charts v2.6 to v2.10 and its code): never a
// misspelling, whatever key they are near (a section's resourceVCountName
// beside resourceCountName).
func hamiKeys() []string {
	return []string{
		"iluvatar", "enabled", "resourcePriorityName", "overwriteEnv", "preConfiguredDeviceMemory", "deviceSplitCount",
		"deviceMemoryScaling", "deviceCoreScaling", "enableNumaTopology", "gpuCorePolicy", "libCudaLogLevel",
		"runtimeClassName", "migProfileAllowlist", "knownMigGeometries", "disableCoreLimit", "migStrategy",
		"sgpuTopologyAware", "memoryPerCard", "hamiVnpuCore", "configs", "templates", "resourcePercentageName",
		"resourceCountName", "resourceMemoryName", "resourceCoreName", "resourceMemoryPercentageName",
		"resourceVCountName", "resourceVMemoryName", "resourceVCoreName", "resourceName",
	}
}

// misspelt returns an error naming the key of read that key is a
// misspelling of (nil: none is within maxEdits, or key is one of HAMi's).
func misspelt(path, key string, read []string) error {
	if slices.Contains(hamiKeys(), key) {
		return nil
	}
	best, ok := Nearest(key, read)
	if !ok {
		return nil
	}
	return fmt.Errorf("%s: unknown key %q: did you mean %s? (a key gpuadmit reads; see docs/configuration.md)", path, key, best)
}

// Nearest is the key of read nearest to key, if one is within two edits
// (the first by name of the nearest), and not key itself.
func Nearest(key string, read []string) (string, bool) {
	best, dist := "", maxEdits+1
	for _, r := range read {
		if d := edits(key, r); d > 0 && (d < dist || (d == dist && r < best)) {
			best, dist = r, d
		}
	}
	return best, dist <= maxEdits
}

// sectionKeys are the top-level keys of the devices section gpuadmit reads.
func sectionKeys() []string {
	return []string{"hamiConfigPath", "hamiConfigMap", "ascend", "nvidia", "cambricon", "hygon", "metax", "enflame", "mthreads", "iluvatars", "kunlun",
		"awsneuron", "amd", "vastai", "biren", "vnpus", "gpushare"}
}

// keysOf lists the keys of fs.
func keysOf(fs fields) []string {
	out := make([]string, 0, len(fs))
	for k := range fs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// edits is the optimal string alignment distance between a and b (the
// Levenshtein distance with adjacent transpositions), stopping early once
// it passes maxEdits.
func edits(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > maxEdits || -d > maxEdits {
		return maxEdits + 1
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
