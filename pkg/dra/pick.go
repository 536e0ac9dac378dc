package dra

import (
	"strconv"
	"strings"
	"sync"

	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/lru"
)

// maxPicks bounds the memo of evaluated selectors: claims may each carry
// selectors of their own (HAMi-DRA writes one per annotated device UUID);
// the least recently used entry is evicted.
const maxPicks = 512

// pickMemo is what one set of selectors made of the devices of one driver:
// the evaluation of the first len(steps) candidates, in the inventory's
// order. It only grows; a step depends on the device and the selectors
// alone, never on the caller's deadline.
type pickMemo struct {
	mu    sync.Mutex
	steps []step
}

func newPicks() *lru.Cache { return lru.New(maxPicks) }

// candidates are the indexes of the devices of driver ("" any driver).
func (inv *Inventory) candidates(driver string) []int {
	if driver == "" {
		return inv.all
	}
	return inv.byDriver[driver]
}

// memo returns the memo of key, created when absent.
func (inv *Inventory) memo(key string) *pickMemo {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if v, ok := inv.picks.Get(key); ok {
		return v.(*pickMemo)
	}
	m := &pickMemo{}
	inv.picks.Add(key, m)
	return m
}

// pick returns the devices of driver ("" any) that programs all accept. The
// evaluation is charged to e: a device evaluated before (by any claim) costs
// what it cost then, so the result depends on the selectors, the inventory
// and the budget left, not on which claim came first; once e's budget or
// context is spent, every remaining device counts as eligible.
func (inv *Inventory) pick(e *evaluation, driver string, programs []cel.CompilationResult) []*device {
	if inv.Len() == 0 {
		return nil
	}
	cands := inv.candidates(driver)
	if len(programs) == 0 {
		return inv.devicesAt(cands)
	}
	m := inv.memo(pickKey(driver, programs))
	m.mu.Lock()
	known := m.steps // a prefix: the memo only appends
	m.mu.Unlock()
	var devs []*device
	var fresh []step
	for i, idx := range cands {
		d := &inv.devices[idx]
		var s step
		if i < len(known) {
			s = known[i]
		} else {
			ok := e.left > 0
			if ok {
				s, ok = e.evaluate(programs, d)
			}
			if !ok {
				devs = append(devs, inv.devicesAt(cands[i:])...)
				break
			}
			fresh = append(fresh, s)
		}
		if !e.spend(s) {
			devs = append(devs, inv.devicesAt(cands[i:])...)
			break
		}
		if s.matched() {
			devs = append(devs, d)
		}
	}
	if len(fresh) > 0 {
		m.mu.Lock()
		if len(m.steps) == len(known) {
			m.steps = append(m.steps, fresh...)
		}
		m.mu.Unlock()
	}
	return devs
}

// pickKey names a driver and a list of selectors without collisions: each
// part is prefixed with its length, so no expression (CEL accepts any
// character in a string or a comment, NUL included) can make one list's key
// another's.
func pickKey(driver string, programs []cel.CompilationResult) string {
	var key strings.Builder
	part := func(s string) {
		key.WriteString(strconv.Itoa(len(s)))
		key.WriteByte(':')
		key.WriteString(s)
	}
	part(driver)
	for i := range programs {
		part(programs[i].Expression)
	}
	return key.String()
}

// devicesAt returns the devices at idx.
func (inv *Inventory) devicesAt(idx []int) []*device {
	out := make([]*device, 0, len(idx))
	for _, i := range idx {
		out = append(out, &inv.devices[i])
	}
	return out
}
