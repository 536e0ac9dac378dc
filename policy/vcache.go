package policy

import (
	"slices"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
)

// smallCacheEntries is how many entries smallCache keeps in its list
// before it moves them into topdown's own cache.
const smallCacheEntries = 16

// smallCache is topdown's virtual cache (the values of the rules and
// functions one evaluation has computed) for the few entries an admission
// evaluation makes: the built-in deny and warn sets, on a pod that fits,
// and little more. topdown's own cache builds a tree of hash maps, one
// level per element of a reference, for each entry (a map per key of
// data.gpuadmit.builtin.deny); here an entry is a copy of its reference in
// a list, searched in order. Past smallCacheEntries (an operator's policy
// calling many functions, say), every entry moves into topdown's cache,
// frame by frame, and it answers from then on, so that a large policy
// never searches a long list. The semantics are topdown's, quirks
// included (TestSmallCacheIsTopdowns): Get reads the top frame only; Pop
// drops the top frame's entries; an entry once marked undefined stays so;
// Keys are the entries with a value.
type smallCache struct {
	// entries starts in first, where an evaluation that fits keeps its
	// two entries without another allocation.
	first   [4]cacheEntry
	entries []cacheEntry
	// frames are where each frame above the first starts in entries.
	frames []int
	big    topdown.VirtualCache
}

type cacheEntry struct {
	ref       ast.Ref
	value     *ast.Term
	undefined bool
}

var _ topdown.VirtualCache = (*smallCache)(nil)

func (c *smallCache) top() []cacheEntry {
	if n := len(c.frames); n > 0 {
		return c.entries[c.frames[n-1]:]
	}
	return c.entries
}

// Push starts a new, empty frame.
func (c *smallCache) Push() {
	if c.big != nil {
		c.big.Push()
		return
	}
	c.frames = append(c.frames, len(c.entries))
}

// Pop drops the top frame and its entries.
func (c *smallCache) Pop() {
	if c.big != nil {
		c.big.Pop()
		return
	}
	if n := len(c.frames); n > 0 {
		clear(c.entries[c.frames[n-1]:])
		c.entries, c.frames = c.entries[:c.frames[n-1]], c.frames[:n-1]
	}
}

// Get is ref's value in the top frame, and whether it is recorded as
// undefined.
func (c *smallCache) Get(ref ast.Ref) (*ast.Term, bool) {
	if c.big != nil {
		return c.big.Get(ref)
	}
	for _, e := range c.top() {
		if sameKey(e.ref, ref) {
			if e.undefined {
				return nil, true
			}
			return e.value, false
		}
	}
	return nil, false
}

// Put records ref's value (nil: undefined) in the top frame. topdown
// reuses the slice it passes, so the entry keeps a copy.
func (c *smallCache) Put(ref ast.Ref, value *ast.Term) {
	if c.big != nil {
		c.big.Put(ref, value)
		return
	}
	top := c.top()
	for i := range top {
		if sameKey(top[i].ref, ref) {
			top[i].set(value)
			return
		}
	}
	if len(c.entries) == smallCacheEntries {
		c.moveToBig()
		c.big.Put(ref, value)
		return
	}
	if c.entries == nil {
		c.entries = c.first[:0]
	}
	e := cacheEntry{ref: slices.Clone(ref)}
	e.set(value)
	c.entries = append(c.entries, e)
}

// set records value as topdown's cache does: nil marks the entry
// undefined (and Get answers so from then on), a value replaces the
// value.
func (e *cacheEntry) set(value *ast.Term) {
	if value == nil {
		e.undefined = true
	} else {
		e.value = value
	}
}

// Keys are the top frame's references.
func (c *smallCache) Keys() []ast.Ref {
	if c.big != nil {
		return c.big.Keys()
	}
	var keys []ast.Ref
	for _, e := range c.top() {
		if e.value != nil {
			keys = append(keys, e.ref)
		}
	}
	return keys
}

// sameKey reports whether topdown's cache files a and b under one entry:
// each element equal and of equal hash (its maps are keyed so). The two
// differ for numbers alone: 1e400 and 10e399 are equal, but out of a
// float's range a number hashes by its text.
func sameKey(a, b ast.Ref) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
		if _, ok := a[i].Value.(ast.String); !ok && a[i].Hash() != b[i].Hash() {
			return false
		}
	}
	return true
}

// moveToBig replays every frame's entries into topdown's cache, pushing
// a frame where one started.
func (c *smallCache) moveToBig() {
	big := topdown.NewVirtualCache()
	start := 0
	for _, end := range c.frames {
		putAll(big, c.entries[start:end])
		big.Push()
		start = end
	}
	putAll(big, c.entries[start:])
	c.big, c.entries, c.frames = big, nil, nil
}

func putAll(big topdown.VirtualCache, entries []cacheEntry) {
	for _, e := range entries {
		if e.value != nil {
			big.Put(e.ref, e.value)
		}
		if e.undefined {
			big.Put(e.ref, nil)
		}
	}
}
