package dra

import (
	"context"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/lru"
)

// DefaultClaimCostBudget is the CEL cost, in the CEL library's runtime cost
// units, one claim's selectors may spend over all the devices they are
// evaluated on: as much as one evaluation the API server and the scheduler
// allow (resourcev1.CELSelectorExpressionMaxCost). An ordinary selector
// costs a few units per device, so a claim of ordinary selectors over
// thousands of devices stays far below it.
const DefaultClaimCostBudget = uint64(resourcev1.CELSelectorExpressionMaxCost)

// celCacheSize is how many compiled selectors a Charger keeps: the distinct
// expressions of a cluster's claims are few (HAMi-DRA writes one per device
// type and annotation value); the least recently used is evicted.
const celCacheSize = 512

// celFeatures: every CEL feature the API server may have accepted in a
// stored expression (consumable capacity, list-type attributes) compiles.
var celFeatures = cel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true}

// selectorCache compiles selectors with the charger's runtime cost limit
// and keeps the compiled programs in a bounded LRU cache
// (k8s.io/utils/lru, safe for concurrent use).
type selectorCache struct {
	limit uint64
	lru   *lru.Cache
	// compiler is the library's compiler of celFeatures, taken once (the
	// library keeps one compiler, rebuilt when asked for other features).
	compiler func(expression string, options cel.Options) cel.CompilationResult
}

func newSelectorCache(size int, limit uint64) *selectorCache {
	return &selectorCache{limit: limit, lru: lru.New(size), compiler: cel.GetCompiler(celFeatures).CompileCELExpression}
}

// compile returns expr compiled with the library's compiler, its runtime
// cost limit set to the cache's; a failed compilation is not kept.
func (s *selectorCache) compile(expr string) cel.CompilationResult {
	if v, ok := s.lru.Get(expr); ok {
		return v.(cel.CompilationResult)
	}
	limit := s.limit
	res := s.compiler(expr, cel.Options{CostLimit: &limit, DisableCostEstimation: true})
	if res.Error == nil {
		s.lru.Add(expr, res)
	}
	return res
}

// evaluation is one claim's allowance of CEL: the caller's context (the
// review's deadline) and what is left of the claim's cost budget. Once
// either is spent no selector is evaluated any more, and every device not
// yet evaluated counts as eligible: the worst case, so a charge is never
// lowered by a selector that could not be evaluated.
type evaluation struct {
	ctx  context.Context
	left uint64
	// limit is the runtime cost limit of one evaluation (what an
	// evaluation that reports no cost is taken to have spent).
	limit uint64
}

// step is one device's evaluation as the pick memo keeps it: the CEL cost
// spent on it (capped at stepCost) and whether every selector accepted it.
type step uint32

const (
	stepMatch step = 1 << 31
	stepCost  step = stepMatch - 1
)

func (s step) cost() uint64  { return uint64(s & stepCost) }
func (s step) matched() bool { return s&stepMatch != 0 }

// evaluate runs every program on d, as the scheduler evaluates them; false
// when the context ended first (the result depends on the caller's
// deadline, not on the device: it must not be remembered). A selector that
// fails at run time on d (a missing attribute, the cost limit) does not rule
// the device out: the worst case.
func (e *evaluation) evaluate(programs []cel.CompilationResult, d *device) (step, bool) {
	in := cel.Device{Driver: d.id.driver, AllowMultipleAllocations: d.allowMulti, Attributes: d.attributes, Capacity: d.capacity}
	var cost uint64
	matched := true
	for i := range programs {
		ok, details, err := programs[i].DeviceMatches(e.ctx, in)
		if e.ctx.Err() != nil {
			return 0, false
		}
		if details != nil && details.ActualCost() != nil {
			cost += *details.ActualCost()
		} else if err != nil {
			cost += e.limit
		}
		if err == nil && !ok {
			matched = false
			break
		}
	}
	s := step(min(cost, stepCost.cost()))
	if matched {
		s |= stepMatch
	}
	return s, true
}

// spend charges one device's evaluation to the budget; false when it did
// not fit (the device and every later one count as eligible). A step of
// zero cost fits only while some budget is left, so a memoised and a fresh
// evaluation stop at the same device.
func (e *evaluation) spend(s step) bool {
	if e.left == 0 || s.cost() > e.left {
		e.left = 0
		return false
	}
	e.left -= s.cost()
	return true
}
