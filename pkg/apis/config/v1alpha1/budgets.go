package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Budgets tune the GPU-hour budgets (GPUBudget, GPUClusterBudget).
type Budgets struct {
	// CheckpointInterval: how often the elected replica writes each
	// budget's status and checkpoint (also at a window's end); the burn of
	// pods deleted while no replica saw them is lost for at most this long
	// (default 1m; 1s..1h).
	CheckpointInterval *metav1.Duration `json:"checkpointInterval,omitempty"`
	// WarnPercents: admission warns, and the elected replica records a
	// Warning Event once per window, when a budget's use reaches each of
	// these percents of its limit (default [80, 95]; each 1..100,
	// ascending; [] never warns).
	WarnPercents []int64 `json:"warnPercents,omitempty"`
	// ClockTolerance: how far a node's container timestamps may shorten a
	// run below what the replicas observed, and how far the replicas'
	// clocks may differ without changing a budget's use (default 1m;
	// 0s..1h).
	ClockTolerance *metav1.Duration `json:"clockTolerance,omitempty"`
	// RollingBuckets: a rolling window's folded burn is kept in this many
	// slices of the window; a slice overlapping the window's start counts
	// whole, so it over-counts by at most one slice (default 48; 4..500).
	RollingBuckets *int32 `json:"rollingBuckets,omitempty"`
}
