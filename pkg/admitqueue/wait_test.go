package admitqueue

import (
	"testing"
	"time"

	"github.com/gpuadmit/gpuadmit/pkg/absence"
)

// TestWaitCovers: the check of the review budget against confirmAfter
// refuses the defaults beside a 10 s webhook (confirmAfter 12 s, budget
// 8 s), and names what it needs.
func TestWaitCovers(t *testing.T) {
	for _, tt := range []struct {
		review, confirm, need time.Duration
		ok                    bool
	}{
		{8 * time.Second, absence.ConfirmMargin, 5 * time.Second, true},                         // no other webhook
		{8 * time.Second, 12 * time.Second, 15 * time.Second, false},                            // Kyverno beside the defaults
		{15 * time.Second, 12 * time.Second, 15 * time.Second, true},                            // the fix
		{28 * time.Second, absence.UnknownWindow, absence.UnknownWindow + 3*time.Second, false}, // configurations unreadable
	} {
		if need, ok := WaitCovers(tt.review, tt.confirm); need != tt.need || ok != tt.ok {
			t.Errorf("WaitCovers(%s, %s) = %s, %v; want %s, %v", tt.review, tt.confirm, need, ok, tt.need, tt.ok)
		}
	}
}
