package policy

import (
	"io/fs"

	"github.com/open-policy-agent/opa/v1/ast"

	defaults "github.com/gpuadmit/gpuadmit/rego"
)

// Reads are the parts of the input document a policy set's rules can
// read, found in the compiled rules: every reference to input, from its
// first key down, as far as the reference names constant keys. A part that
// no rule names is never read, so the caller may leave it out of the input
// (docs/policy-input.md still describes the whole document: a policy that
// reads a part makes it present). Anything the analysis cannot follow
// (input itself passed on or iterated, a key computed at evaluation) reads
// everything below that point.
type Reads struct {
	all  bool
	keys map[string]*Reads
	// guardsUntrusted: a module other than the built-in ones as embedded
	// may read input.guard (an operator's copy of a built-in file, edited:
	// its guard lines cannot be known to match its conditions) or change
	// what a built-in rule computes (changesBuiltin).
	guardsUntrusted bool
}

// GuardsTrusted reports whether input.guard is read only by the built-in
// rules as embedded, whose guard lines the Decider's lists are proved
// against, and no other module can change what they compute
// (docs/policy-input.md). When it is not, every list must name
// something, so that no rule is skipped.
func (r *Reads) GuardsTrusted() bool { return r == nil || !r.guardsUntrusted }

// AllReads reads everything: the whole input is built.
func AllReads() *Reads { return &Reads{all: true} }

// All reports whether everything below this point is read.
func (r *Reads) All() bool { return r == nil || r.all }

// Has reports whether key (or something under it) is read.
func (r *Reads) Has(key string) bool {
	if r.All() {
		return true
	}
	_, ok := r.keys[key]
	return ok
}

// Under is what is read under key (everything when everything here is).
func (r *Reads) Under(key string) *Reads {
	if r.All() {
		return AllReads()
	}
	if u := r.keys[key]; u != nil {
		return u
	}
	return &Reads{}
}

// child is the node of key under r, made when missing.
func (r *Reads) child(key string) *Reads {
	if r.keys == nil {
		r.keys = map[string]*Reads{}
	}
	c := r.keys[key]
	if c == nil {
		c = &Reads{}
		r.keys[key] = c
	}
	return c
}

// add records a read of input's path (the reference's elements after input).
func (r *Reads) add(path ast.Ref) {
	node := r
	for _, t := range path {
		if node.all {
			return
		}
		key, ok := t.Value.(ast.String)
		if !ok {
			node.all = true // a key only known at evaluation: anything here
			return
		}
		node = node.child(string(key))
	}
	node.all = true // the value at the end is read whole
}

// readsOf finds what the compiled modules read of input; builtin says
// whether a module (by its name) is a built-in file as embedded.
func readsOf(modules map[string]*ast.Module, builtin func(name string) bool) *Reads {
	w := &readsWalker{reads: &Reads{}}
	for name, m := range modules {
		w.operator = !builtin(name)
		ast.WalkTerms(m, w.visit)
		if w.operator {
			w.changesBuiltin(m)
		}
	}
	return w.reads
}

// builtinRef is the built-in rules' package.
var builtinRef = ast.MustParseRef(BuiltinPackage)

// changesBuiltin marks the guards untrusted when an operator's module can
// change what a built-in rule computes, so that a rule the guards skip
// could fire: a rule of its own in the built-in package (a partial set
// such as unsatisfiable takes every module's definitions), or an
// evaluation with something the built-in rules read replaced (with
// input.teamLimits as ..., with gt as gte, with
// data.gpuadmit.builtin.all_fit as false). Replacing the operator's own
// rules (with data.gpuadmit.admission.limit as 2) keeps them trusted.
// The guards are proved against the built-in rules as embedded, on the
// input as built.
func (w *readsWalker) changesBuiltin(m *ast.Module) {
	for _, r := range m.Rules {
		if overlaps(m.Package.Path.Extend(r.Ref().GroundPrefix())) {
			w.reads.guardsUntrusted = true
		}
	}
	ast.WalkWiths(m, func(with *ast.With) bool {
		if r, ok := with.Target.Value.(ast.Ref); !ok || !r.HasPrefix(ast.DefaultRootRef) || overlaps(r) {
			w.reads.guardsUntrusted = true
		}
		return false
	})
}

// overlaps reports whether ref and the built-in package are one inside
// the other.
func overlaps(ref ast.Ref) bool {
	return ref.HasPrefix(builtinRef) || builtinRef.HasPrefix(ref)
}

// readsWalker walks one module at a time; operator: the module is not a
// built-in file as embedded.
type readsWalker struct {
	reads    *Reads
	operator bool
}

// guardRead marks the guards untrusted when an operator's module reads
// input by path (the elements after input) that may reach input.guard.
func (w *readsWalker) guardRead(path ast.Ref) {
	if !w.operator {
		return
	}
	if len(path) == 0 {
		w.reads.guardsUntrusted = true
		return
	}
	if key, ok := path[0].Value.(ast.String); !ok || key == "guard" {
		w.reads.guardsUntrusted = true
	}
}

// visit records a reference to input (and what its computed keys read), or
// everything for input used other than through a reference.
func (w *readsWalker) visit(t *ast.Term) bool {
	switch v := t.Value.(type) {
	case ast.Ref:
		if !v.HasPrefix(ast.InputRootRef) {
			return false
		}
		w.reads.add(v[1:])
		w.guardRead(v[1:])
		for _, e := range v[1:] {
			ast.WalkTerms(e, w.visit)
		}
		return true
	case ast.Var:
		if v.Equal(ast.InputRootDocument.Value) {
			w.reads.all = true
			w.guardRead(nil)
		}
	}
	return false
}

// isBuiltin reports whether m is one of the built-in policy files, as
// embedded, byte for byte (an operator's file of the same name replaces
// it, edited or not).
func isBuiltin(m *module) bool {
	text, err := fs.ReadFile(defaults.FS, m.path)
	return err == nil && string(text) == m.text
}
