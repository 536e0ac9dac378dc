package workloadcheck

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// DefaultMaxSurge is a Deployment's spec.strategy.rollingUpdate.maxSurge
// when it sets none.
const DefaultMaxSurge = "25%"

// Surge is the pods a Deployment's rollout creates beside the old ones,
// when the update changes its pod template (0 when it does not, for the
// Recreate strategy, and for a workload that is not a Deployment):
// maxSurge of replicas (a percentage rounded up, as the deployment
// controller rounds it).
func Surge(kind string, old, obj map[string]any, replicas int64) (int64, error) {
	if kind != "Deployment" || old == nil || replicas == 0 {
		return 0, nil
	}
	if reflect.DeepEqual(dig(old, "spec", "template"), dig(obj, "spec", "template")) {
		return 0, nil
	}
	if t, _ := dig(obj, "spec", "strategy", "type").(string); t == "Recreate" {
		return 0, nil
	}
	v := dig(obj, "spec", "strategy", "rollingUpdate", "maxSurge")
	if v == nil {
		v = DefaultMaxSurge
	}
	return surgeOf(v, replicas)
}

// surgeOf reads maxSurge, a whole number or a percentage of replicas.
func surgeOf(v any, replicas int64) (int64, error) {
	s := fmt.Sprint(v)
	if pct, ok := strings.CutSuffix(s, "%"); ok {
		p, err := strconv.ParseInt(pct, 10, 64)
		if err != nil || p < 0 {
			return 0, fmt.Errorf("spec.strategy.rollingUpdate.maxSurge %q is not a percentage", s)
		}
		if p != 0 && replicas > math.MaxInt64/p {
			return replicas, nil
		}
		return (p*replicas + 99) / 100, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("spec.strategy.rollingUpdate.maxSurge %q is not a whole number", s)
	}
	return n, nil
}

// dig is the value at a path of fields (nil when absent).
func dig(obj map[string]any, fields ...string) any {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[f]
	}
	return cur
}
