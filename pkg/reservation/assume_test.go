package reservation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuadmitv1 "github.com/gpuadmit/gpuadmit/pkg/apis/gpuadmit/v1alpha1"
)

func set(uid types.UID, rv string, reserved ...types.UID) *gpuadmitv1.GPUReservationSet {
	u := &gpuadmitv1.GPUReservationSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: gpuadmitv1.ObjectName, UID: uid, ResourceVersion: rv}}
	for _, r := range reserved {
		u.Status.Reservations = append(u.Status.Reservations, gpuadmitv1.Reservation{PodUID: r})
	}
	return u
}

// TestAssumed: the copy this replica wrote stands in for the informer's
// older one (a round reading that would only conflict), and never for a
// newer one or for another object of the same name (deleted and
// recreated: its reservations are the truth, however old the copy's are).
func TestAssumed(t *testing.T) {
	for _, tt := range []struct {
		name     string
		informer *gpuadmitv1.GPUReservationSet
		want     string // UID/resourceVersion Newest returns
		forgets  bool
	}{
		{name: "the informer is behind: the written copy", informer: set("a", "5"), want: "a/7"},
		{name: "the informer caught up: its own, the copy forgotten", informer: set("a", "7", "p1"), want: "a/7", forgets: true},
		{name: "the informer is ahead: its own", informer: set("a", "9"), want: "a/9", forgets: true},
		{name: "recreated (another UID), older version: its own", informer: set("b", "3"), want: "b/3", forgets: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := NewAssumed()
			a.Assume("ns", set("a", "7", "p1"))
			if got := a.Newest(tt.informer); string(got.UID)+"/"+got.ResourceVersion != tt.want {
				t.Fatalf("Newest = %s/%s, want %s", got.UID, got.ResourceVersion, tt.want)
			}
			if again := a.Newest(set("a", "1")); (again.ResourceVersion == "7") == tt.forgets {
				t.Errorf("after Newest, the copy is kept: %v; want forgotten: %v", again.ResourceVersion == "7", tt.forgets)
			}
		})
	}
	a := NewAssumed()
	a.Assume("ns", set("a", "7"))
	a.Assume("ns", nil)
	if got := a.Newest(set("a", "5")); got.ResourceVersion != "5" {
		t.Errorf("a forgotten copy still stands in: %s", got.ResourceVersion)
	}
	// A copy is the object as written, not shared with the writer.
	w := set("a", "8", "p1")
	a.Assume("ns", w)
	w.Status.Reservations = nil
	if got := a.Newest(set("a", "5")); len(got.Status.Reservations) != 1 {
		t.Errorf("the assumed copy changed with the writer's object: %+v", got.Status)
	}
}

// TestAssumedWakesWaiters: Next's channel closes at the next delivery,
// not before.
func TestAssumedWakesWaiters(t *testing.T) {
	a := NewAssumed()
	next := a.Next()
	select {
	case <-next:
		t.Fatal("closed before a delivery")
	default:
	}
	a.Delivered()
	select {
	case <-next:
	default:
		t.Fatal("not closed by a delivery")
	}
	select {
	case <-a.Next():
		t.Fatal("the next channel is closed already")
	default:
	}
}
