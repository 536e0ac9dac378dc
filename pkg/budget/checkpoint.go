package budget

import (
	"cmp"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
	"github.com/gpuadmit/gpuadmit/pkg/burn"
)

// Bounds of a checkpoint.
const (
	// MaxFoldedPods is the most foldedPods entries a checkpoint holds (about
	// 85 bytes each in JSON: some 1 MB, with the buckets well under the
	// API server's 1.5 MiB object limit; the CRD's MaxItems).
	MaxFoldedPods = 12000
	// maxLiveFolded is the most entries a checkpoint gets for live pods
	// (about 75 bytes each: some 600 KB of the status at most).
	maxLiveFolded = 8000
	// maxBuckets is the most buckets read from a status (the CRD's bound).
	maxBuckets = 1000
	// keepDeletedFor is how many checkpoint intervals a deleted pod's
	// foldedPods entry outlives its end (a lagging informer still listing
	// it is not counted twice meanwhile).
	keepDeletedFor = 10
)

// checkpoint is a status's checkpoint as the accrual reads it.
type checkpoint struct {
	time        time.Time
	writer      string
	windowStart time.Time
	folded      burn.Amounts
	buckets     []bucket
	foldedPods  map[types.UID]time.Time
	// dropped are the entries of this replica's deleted pods a fold left
	// out (MaxFoldedPods), with their until: released once written.
	dropped map[types.UID]time.Time
}

// bucket is a rolling window's folded burn from start, one width long.
type bucket struct {
	start   time.Time
	amounts burn.Amounts
}

// readCheckpoint reads a status's checkpoint as written by gpuadmit's
// elected replica (trusted as written), without failing on anything: an
// amount of a resource no family has is dropped (nothing burns it), a
// negative amount counts as zero, a huge one saturates; beyond
// MaxFoldedPods entries the latest are kept, beyond maxBuckets buckets
// the latest.
func (t *Tracker) readCheckpoint(in *gpuadmitv1.BudgetCheckpoint) checkpoint {
	var cp checkpoint
	if in == nil {
		return cp
	}
	cp.time, cp.writer = in.Time.Time, in.Writer
	if in.WindowStart != nil {
		cp.windowStart = in.WindowStart.Time
	}
	cp.folded = t.readAmounts(in.Folded)
	for _, b := range in.Buckets {
		cp.buckets = append(cp.buckets, bucket{start: b.Start.Time, amounts: t.readAmounts(b.Amounts)})
	}
	slices.SortStableFunc(cp.buckets, func(a, b bucket) int { return a.start.Compare(b.start) })
	if len(cp.buckets) > maxBuckets {
		cp.buckets = cp.buckets[len(cp.buckets)-maxBuckets:]
	}
	fp := in.FoldedPods
	if len(fp) > MaxFoldedPods {
		fp = slices.Clone(fp)
		slices.SortFunc(fp, func(a, b gpuadmitv1.FoldedPod) int { return b.Until.Compare(a.Until.Time) })
		fp = fp[:MaxFoldedPods]
	}
	cp.foldedPods = make(map[types.UID]time.Time, len(fp))
	for _, p := range fp {
		if p.UID == "" {
			continue
		}
		if old, ok := cp.foldedPods[types.UID(p.UID)]; !ok || p.Until.After(old) {
			cp.foldedPods[types.UID(p.UID)] = p.Until.Time
		}
	}
	return cp
}

func (t *Tracker) readAmounts(in []gpuadmitv1.BudgetAmount) burn.Amounts {
	var out burn.Amounts
	for _, a := range in {
		if k, ok := keyOf(t.opts.Families, a.Resource); ok {
			out = out.Add(burn.Amounts{k: burn.Amount(a.UnitMilliseconds)})
		}
	}
	return out
}

// foldedIn is the folded burn that counts in the window starting at start:
// a calendar window's folded when it belongs to that window (nothing after
// a rollover); a rolling window's buckets that end after start (a bucket
// that overlaps the start counts whole).
func (cp *checkpoint) foldedIn(w burn.Window, start time.Time, width time.Duration) burn.Amounts {
	if w.Rolling() == 0 {
		if cp.windowStart.Equal(start) {
			return burn.Amounts{}.Add(cp.folded)
		}
		return nil
	}
	var out burn.Amounts
	for _, b := range cp.buckets {
		if b.start.Add(width).After(start) {
			out = out.Add(b.amounts)
		}
	}
	return out
}

// bucketWidth is the width of a rolling window's buckets, n per window
// (0: defaultBuckets).
func bucketWidth(rolling time.Duration, n int) time.Duration {
	if n <= 0 {
		n = defaultBuckets
	}
	return max(rolling/time.Duration(n), time.Millisecond)
}

const defaultBuckets = 48

// write renders cp for a status.
func (t *Tracker) writeCheckpoint(cp *checkpoint, rolling bool) *gpuadmitv1.BudgetCheckpoint {
	out := &gpuadmitv1.BudgetCheckpoint{Time: metav1.NewMicroTime(cp.time), Writer: cp.writer}
	if !rolling {
		ws := metav1.NewTime(cp.windowStart)
		out.WindowStart = &ws
		out.Folded = t.writeAmounts(cp.folded)
	}
	for _, b := range cp.buckets {
		out.Buckets = append(out.Buckets, gpuadmitv1.BudgetBucket{Start: metav1.NewTime(b.start), Amounts: t.writeAmounts(b.amounts)})
	}
	for uid, until := range cp.foldedPods {
		out.FoldedPods = append(out.FoldedPods, gpuadmitv1.FoldedPod{UID: string(uid), Until: metav1.NewMicroTime(until)})
	}
	slices.SortFunc(out.FoldedPods, func(a, b gpuadmitv1.FoldedPod) int {
		return cmp.Or(a.Until.Compare(b.Until.Time), cmp.Compare(a.UID, b.UID))
	})
	return out
}

func (t *Tracker) writeAmounts(a burn.Amounts) []gpuadmitv1.BudgetAmount {
	var out []gpuadmitv1.BudgetAmount
	for k, v := range a {
		if name := nameOf(t.opts.Families, k); name != "" && v > 0 {
			out = append(out, gpuadmitv1.BudgetAmount{Resource: name, UnitMilliseconds: int64(v)})
		}
	}
	slices.SortFunc(out, func(a, b gpuadmitv1.BudgetAmount) int { return cmp.Compare(a.Resource, b.Resource) })
	return out
}
