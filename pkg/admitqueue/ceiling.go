//go:build gpuadmit_testhooks

package admitqueue

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/gpuadmit/gpuadmit/pkg/decision"
)

// ceilingBuild: a test build (-tags gpuadmit_testhooks) honours
// Options.AnswerBeforeWrite; the production binary's constant is false, so
// the compiler drops the early answer from it.
const ceilingBuild = true

// answerEarly is the ceiling a create could reach if a replica admitted
// without waiting for any write (what a share of the headroom granted in
// advance would at best give): it answers allowed at once, and the review
// still goes through the namespace's worker, decided and written as
// always, in the background; its answer is dropped. It measures, and
// admits past the quota: only a benchmark turns it on
// (BenchmarkCreateLatency's ceiling row, --test-answer-before-write).
func (s *Store) answerEarly(ctx context.Context, uid types.UID, req decision.Request) (decision.Result, error) {
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	r := &review{ctx: bg, uid: uid, req: req, done: make(chan answer, 1)}
	if d, ok := bg.Deadline(); ok {
		r.deadline = s.opts.Clock.Now().Add(time.Until(d))
	}
	s.submit(req.Namespace, func(q *queue) { q.reviews = append(q.reviews, r) })
	go func() {
		defer cancel()
		select {
		case <-r.done:
		case <-bg.Done():
		}
	}()
	return decision.Result{Allowed: true}, nil
}
