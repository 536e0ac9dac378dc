package feed

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// progressSink is a ledger that notes, at every call, how far the feed
// claimed to be.
type progressSink struct {
	*ledger.Ledger
	feed     *podFeed
	claimed  []string
	replaced int
}

func (s *progressSink) UpsertPod(p *corev1.Pod) {
	s.claimed = append(s.claimed, s.feed.progress.get())
	s.Ledger.UpsertPod(p)
}

func (s *progressSink) ReplacePods(ps []metav1.Object) {
	s.replaced++
	s.Ledger.ReplacePods(ps)
}

// TestPodFeedProgressIsOrdered: a list (initial, or after a watch broke)
// is applied whole before the progress moves, and then to the list's
// resourceVersion, never to the largest resourceVersion among its pods
// (they come in key order); watch events and bookmarks move it in order; a
// pod the relist lacks is removed.
func TestPodFeedProgressIsOrdered(t *testing.T) {
	l := newLedger(t)
	sink := &progressSink{Ledger: l}
	f := &podFeed{sink: sink, log: testr.New(t)}
	f.progress.init()
	sink.feed = f
	gpu := func(name, uid, rv string) *corev1.Pod {
		return testpod.New(name).NS("ns").UID(uid).RV(rv).App("c", testpod.GPU(1), testpod.Mem(1024)).Build()
	}
	list := func(rv string, pods ...*corev1.Pod) toolscache.Deltas {
		objs := make([]any, len(pods))
		for i, p := range pods {
			objs[i] = p
		}
		return toolscache.Deltas{{Type: toolscache.ReplacedAll, Object: toolscache.ReplacedAllInfo{ResourceVersion: rv, Objects: objs}}}
	}
	steps := []struct {
		name  string
		items toolscache.Deltas
		want  string
		pods  int
	}{
		{"initial list: key order, resourceVersions 90, 12, 50", list("100", gpu("a", "ua", "90"), gpu("b", "ub", "12"), gpu("c", "uc", "50")), "100", 3},
		{"a watch event", toolscache.Deltas{{Type: toolscache.Updated, Object: gpu("b", "ub", "101")}}, "101", 3},
		{"a bookmark", toolscache.Deltas{{Type: toolscache.Bookmark, Object: toolscache.BookmarkInfo{ResourceVersion: "120"}}}, "120", 3},
		{"a relist without b", list("150", gpu("a", "ua", "140"), gpu("c", "uc", "50")), "150", 2},
		{"a deletion", toolscache.Deltas{{Type: toolscache.Deleted, Object: gpu("c", "uc", "151")}}, "151", 1},
	}
	for _, st := range steps {
		before := f.progress.get()
		sink.claimed = nil
		if err := f.process(st.items, false); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		for _, c := range sink.claimed {
			if c != before {
				t.Fatalf("%s: progress %s claimed while applying, want %s until the whole item is applied", st.name, c, before)
			}
		}
		if got := f.progress.get(); got != st.want || l.Namespace("ns", nil).Pods != st.pods {
			t.Fatalf("%s: progress %s with %d pods, want %s with %d", st.name, got, l.Namespace("ns", nil).Pods, st.want, st.pods)
		}
	}
	if sink.replaced != 2 {
		t.Errorf("lists applied %d times, want 2", sink.replaced)
	}
}

// TestProgressWait: a wait for a resourceVersion returns once the feed got
// there (numerically: "100" is past "99"), and with the context's error
// while it has not.
func TestProgressWait(t *testing.T) {
	var p progress
	p.init()
	p.advance("99")
	done := make(chan error, 1)
	go func() { done <- p.wait(t.Context(), "100") }()
	p.advance("98") // never back
	select {
	case err := <-done:
		t.Fatalf("returned at 99 waiting for 100: %v", err)
	case <-time.After(20 * time.Millisecond):
	}
	p.advance("100")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := p.wait(ctx, "101"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if p.get() != "100" {
		t.Fatalf("progress %s", p.get())
	}
}
