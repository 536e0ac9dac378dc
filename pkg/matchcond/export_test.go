package matchcond

// What only the tests use: Match's results folded into "is the pod's CREATE
// seen at all, and by which webhooks".

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// Consulted says whether a CREATE of pod would reach at least one of the
// webhooks, and names those it would reach, in configuration order.
func (m *Matcher) Consulted(ctx context.Context, pod *corev1.Pod) (bool, []string, error) {
	results, err := m.Match(ctx, pod)
	if err != nil {
		return false, nil, err
	}
	var called []string
	for _, r := range results {
		if r.Called {
			called = append(called, r.Webhook)
		}
	}
	return len(called) > 0, called, nil
}
