package workload

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Path is a parsed path into an object: dotted field names, and [*] for
// every item of a list or every value of a map (in key order), e.g.
// spec.replicatedJobs[*].template.spec.template.
type Path struct {
	text  string
	steps []step
}

// step is a field name, or [*] (each).
type step struct {
	field string
	each  bool
}

// ParsePath parses a path; an empty path, an empty field name or a bracket
// other than [*] is an error naming the position.
func ParsePath(s string) (Path, error) {
	if s == "" {
		return Path{}, fmt.Errorf("empty path")
	}
	p := Path{text: s}
	rest := s
	for i := 0; rest != ""; i++ {
		switch {
		case strings.HasPrefix(rest, "[*]"):
			if i == 0 {
				return Path{}, fmt.Errorf("path %q: [*] must follow a field name", s)
			}
			p.steps = append(p.steps, step{each: true})
			rest = rest[3:]
			if rest != "" && rest[0] != '.' && rest[0] != '[' {
				return Path{}, fmt.Errorf("path %q: [*] must be followed by '.' or the end", s)
			}
			rest = strings.TrimPrefix(rest, ".")
			if rest == "" && strings.HasSuffix(s, ".") {
				return Path{}, fmt.Errorf("path %q: ends with '.'", s)
			}
		case rest[0] == '[':
			return Path{}, fmt.Errorf("path %q: only [*] is supported between brackets", s)
		default:
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return Path{}, fmt.Errorf("path %q: empty field name", s)
			}
			p.steps = append(p.steps, step{field: rest[:end]})
			rest = rest[end:]
			if strings.HasPrefix(rest, ".") {
				rest = rest[1:]
				if rest == "" {
					return Path{}, fmt.Errorf("path %q: ends with '.'", s)
				}
			}
		}
	}
	return p, nil
}

// String is the path as written.
func (p Path) String() string { return p.text }

// IsZero reports an unset path.
func (p Path) IsZero() bool { return len(p.steps) == 0 }

// eachCount is the number of [*] in the path.
func (p Path) eachCount() int {
	n := 0
	for _, s := range p.steps {
		if s.each {
			n++
		}
	}
	return n
}

// prefixOfEach is the path's text before its k-th [*] (from 0).
func (p Path) prefixOfEach(k int) string {
	var b strings.Builder
	for _, s := range p.steps {
		if s.each {
			if k == 0 {
				return b.String()
			}
			k--
			b.WriteString("[*]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.field)
	}
	return b.String()
}

// alignedWith checks that every [*] of p iterates the same list as the
// [*] at the same position of t, so that p is read at t's indexes.
func (p Path) alignedWith(t Path) error {
	n := p.eachCount()
	if n > t.eachCount() {
		return fmt.Errorf("path %q has more [*] than the template path %q", p.text, t.text)
	}
	for k := range n {
		if p.prefixOfEach(k) != t.prefixOfEach(k) {
			return fmt.Errorf("path %q: its [*] number %d is not over the template path's list %q", p.text, k+1, t.prefixOfEach(k))
		}
	}
	return nil
}

// match is a value found at a path, with the index (list position or map
// key) each [*] took, and the path with those indexes written in.
type match struct {
	value   any
	indexes []string
	where   string
}

// find returns every value at p in obj; a path that leads nowhere (a
// missing field, a value of another type) matches nothing.
func (p Path) find(obj any) []match {
	out := []match{{value: obj}}
	for _, s := range p.steps {
		var next []match
		for _, m := range out {
			next = append(next, s.apply(m)...)
		}
		out = next
	}
	return out
}

func (s step) apply(m match) []match {
	if !s.each {
		obj, ok := m.value.(map[string]any)
		if !ok {
			return nil
		}
		v, ok := obj[s.field]
		if !ok || v == nil {
			return nil
		}
		return []match{{value: v, indexes: m.indexes, where: joinField(m.where, s.field)}}
	}
	switch v := m.value.(type) {
	case []any:
		out := make([]match, 0, len(v))
		for i, item := range v {
			idx := strconv.Itoa(i)
			out = append(out, match{value: item, indexes: appendIndex(m.indexes, idx), where: m.where + "[" + idx + "]"})
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([]match, 0, len(v))
		for _, k := range keys {
			out = append(out, match{value: v[k], indexes: appendIndex(m.indexes, k), where: m.where + "[" + k + "]"})
		}
		return out
	}
	return nil
}

// at returns the value at p in obj with its [*] bound to indexes (a
// template's), and whether there is one.
func (p Path) at(obj any, indexes []string) (any, string, bool) {
	cur, where, k := obj, "", 0
	for _, s := range p.steps {
		if !s.each {
			m, ok := cur.(map[string]any)
			if !ok || m[s.field] == nil {
				return nil, "", false
			}
			cur, where = m[s.field], joinField(where, s.field)
			continue
		}
		if k >= len(indexes) {
			return nil, "", false
		}
		idx := indexes[k]
		k++
		var ok bool
		if cur, ok = index(cur, idx); !ok {
			return nil, "", false
		}
		where += "[" + idx + "]"
	}
	return cur, where, true
}

func index(v any, idx string) (any, bool) {
	switch c := v.(type) {
	case []any:
		i, err := strconv.Atoi(idx)
		if err != nil || i < 0 || i >= len(c) {
			return nil, false
		}
		return c[i], c[i] != nil
	case map[string]any:
		item, ok := c[idx]
		return item, ok && item != nil
	}
	return nil, false
}

func joinField(where, field string) string {
	if where == "" {
		return field
	}
	return where + "." + field
}

func appendIndex(idx []string, i string) []string {
	out := make([]string, len(idx), len(idx)+1)
	copy(out, idx)
	return append(out, i)
}
