package ledger

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// keptSnapshot is a snapshot the model test keeps across steps, with its
// JSON when it was taken.
type keptSnapshot struct {
	step int
	snap Snapshot
	json []byte
}

// keptEvery is how many steps a kept snapshot is kept.
const keptEvery = 100

// checkKept, every keptEvery steps, asserts that the snapshot kept since
// the step before still reads as it did then: the parts a snapshot shares
// with the ledger (a namespace's Used, Limits, Quotas and
// NativeRequestQuotas) are replaced by the ledger's later events, never
// changed in place. It then keeps a snapshot of now.
func (m *model) checkKept(step int) error {
	if step%keptEvery != 0 {
		return nil
	}
	if h := m.kept; h.json != nil {
		now, err := json.Marshal(h.snap)
		if err != nil {
			return err
		}
		if !bytes.Equal(now, h.json) {
			return fmt.Errorf("the snapshot taken at step %d changed since:\n%s\nnow\n%s", h.step, h.json, now)
		}
		m.exercised["kept snapshot"]++
	}
	s := m.l.Snapshot(m.pending)
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	m.kept = keptSnapshot{step: step, snap: s, json: b}
	return nil
}
