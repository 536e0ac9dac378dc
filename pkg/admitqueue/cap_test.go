package admitqueue

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// TestReviewWaitsAtReservationCap: at MaxReservations (3 here) a review
// waits, within its deadline, for one of them to end, instead of being
// refused at once: the object never holds more than the cap, and the
// review is admitted as soon as one ended (found absent, or recorded); it
// is refused at once when none can end before its deadline, and once none
// can end in the time left to it (their pods exist: reads keep them). The fake clock is stepped once the review was
// decided the first time (it then waits).
func TestReviewWaitsAtReservationCap(t *testing.T) {
	tests := []struct {
		name string
		// exist: the reserved pods exist (no watch records them)
		exist        bool
		confirmAfter time.Duration
		// meanwhile happens once the review was decided the first time.
		meanwhile func(clk *clocktesting.FakeClock, l *ledger.Ledger)
		// drive: then the clock moves on, half a second at a time (the
		// waiting review waits on it).
		drive    bool
		admitted bool
		// waited: the review was decided more than once.
		waited bool
		left   []string // the reservations after
	}{
		{name: "their pods fall due and are absent: admitted in the write that removes them", confirmAfter: time.Second,
			meanwhile: func(clk *clocktesting.FakeClock, _ *ledger.Ledger) {
				clk.SetTime(clk.Now().Add(2 * time.Second))
			},
			admitted: true, waited: true, left: []string{"u3"}},
		{name: "one pod is recorded: admitted once its reservation ended", confirmAfter: time.Second,
			meanwhile: func(_ *clocktesting.FakeClock, l *ledger.Ledger) {
				l.UpsertPod(testpod.New("p0").NS("ns").UID("u0").App("c", testpod.GPU(1), testpod.Mem(1)).Build())
			},
			drive: true, admitted: true, waited: true, left: []string{"u1", "u2", "u3"}},
		{name: "none can end before the deadline: refused at once", confirmAfter: time.Minute,
			meanwhile: func(*clocktesting.FakeClock, *ledger.Ledger) {}, left: []string{"u0", "u1", "u2"}},
		{name: "their pods exist unseen: refused once none can end in time", exist: true, confirmAfter: time.Second,
			meanwhile: func(clk *clocktesting.FakeClock, _ *ledger.Ledger) {
				clk.SetTime(clk.Now().Add(2 * time.Second))
			},
			waited: true, drive: true, left: []string{"u0", "u1", "u2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var objs []client.Object
			for i := range 3 {
				if tt.exist {
					objs = append(objs, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("p", i), UID: typesUID("u", i)}})
				}
			}
			c := fakeClient(t, objs...)
			s, l, _, clk := newStoreWith(t, c, "a", Options{ConfirmAfter: tt.confirmAfter, RecheckMax: time.Minute, ReadsPerSecond: 10,
				MaxReservations: 3, Clock: clocktesting.NewFakeClock(time.Unix(1000, 0))})
			for i := range 3 {
				if err := reserve(t.Context(), s, fmt.Sprint("u", i), fmt.Sprint("p", i), vec(1, 1)); err != nil {
					t.Fatal(err)
				}
			}
			var decided atomic.Int64
			first := make(chan struct{})
			done := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				done <- admitPod(ctx, s, "ns", "u3", "p3", func(decision.Request) (verdict, error) {
					if decided.Add(1) == 1 {
						close(first)
					}
					return verdict{Reserve: true, Demand: vec(1, 1)}, nil
				})
			}()
			<-first
			tt.meanwhile(clk, l)
			var err error
			for answered := false; !answered; {
				select {
				case err = <-done:
					answered = true
				case <-time.After(10 * time.Millisecond):
					if tt.drive {
						clk.SetTime(clk.Now().Add(time.Second / 2))
					}
				}
			}
			if tt.admitted != (err == nil) || (err != nil && !strings.Contains(err.Error(), "holds 3 reservations")) {
				t.Fatalf("admitted: error %v, want admitted %v (else refused at the cap)", err, tt.admitted)
			}
			if waited := decided.Load() > 1; waited != tt.waited {
				t.Errorf("decided %d times, want waited %v", decided.Load(), tt.waited)
			}
			var left []string
			for _, r := range usage(t, c, "ns").Status.Reservations {
				left = append(left, string(r.PodUID))
			}
			if strings.Join(left, ",") != strings.Join(tt.left, ",") {
				t.Fatalf("reservations %v, want %v (never more than the cap)", left, tt.left)
			}
			if refusals := metrics(s).list(&metrics(s).refused); (refusals == RefusedLimit) == tt.admitted {
				t.Errorf("refusals counted %q", refusals)
			}
		})
	}
}

func typesUID(prefix string, i int) types.UID { return types.UID(fmt.Sprint(prefix, i)) }
