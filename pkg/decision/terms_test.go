package decision

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
)

// TestDocumentKeysAreSharedWords: every key of the input document (at every
// depth, the pod's own maps aside) is one of the Decider's shared words, so
// that building a document allocates no key; a key added to the input
// without adding it to newWords fails here.
func TestDocumentKeysAreSharedWords(t *testing.T) {
	ev := &capturing{Evaluator: loadedEngine(t)}
	d, _ := twoFamilyDecider(t, ev)
	pods := []*corev1.Pod{
		testpod.New("both").NS("team-a").Label("app", "x").Annotate("a", "b").NodeSelector("zone", "1").
			Init("init", testpod.GPU(1), testpod.Mem(1024)).Sidecar("side", testpod.GPU(1), testpod.Mem(512)).
			App("c", append(npu(1, 4096), testpod.GPU(1), testpod.MemPct(50))...).Build(),
		testpod.New("invalid").NS("team-a").App("c", testpod.GPU(1), testpod.Mem(-1)).Build(),
	}
	for _, pod := range pods {
		if _, err := d.Decide(context.Background(), Request{Pod: pod, User: UserInfo{Username: "u", Groups: []string{"g"}}}); err != nil {
			t.Fatal(err)
		}
		checkKeys(t, d.words, ast.NewTerm(ev.last), "input")
	}
}

// checkKeys fails for an object key under t that is not its word's term,
// skipping the maps whose keys come from the pod or the namespace.
func checkKeys(t *testing.T, w words, term *ast.Term, path string) {
	t.Helper()
	switch v := term.Value.(type) {
	case ast.Object:
		v.Foreach(func(k, val *ast.Term) {
			key := string(k.Value.(ast.String))
			if w.strs[key] != k && !ast.HasInternedValue(key) {
				t.Errorf("%s.%s: the key is not a shared word (add it to newWords)", path, key)
			}
			switch key {
			case "labels", "annotations", "nodeSelector", "namespaceLabels", "capacity", "settings":
				return // user keys, or converted once per Decider
			}
			checkKeys(t, w, val, path+"."+key)
		})
	case *ast.Array:
		v.Foreach(func(e *ast.Term) { checkKeys(t, w, e, path+"[]") })
	}
}

// TestBuilder: the builder's terms equal OPA's own for the same values
// (numbers small, large, negative, the extremes; strings shared or not),
// the slabs keep every term made before they grew, and repeated numbers
// and empty containers come back as one term.
func TestBuilder(t *testing.T) {
	b := &builder{words: newWords(nil)}
	var made []*ast.Term
	var want []*ast.Term
	for i := range 300 { // several slabs
		n := int64(i)*7919 - 1000
		made, want = append(made, b.num(n)), append(want, ast.IntNumberTerm(int(n)))
		s := fmt.Sprint("s", i)
		made, want = append(made, b.str(s)), append(want, ast.StringTerm(s))
	}
	for _, n := range []int64{0, 1, 511, 512, -1, -2, math.MaxInt64, math.MinInt64} {
		made, want = append(made, b.num(n)), append(want, ast.NewTerm(ast.Number(strconv.FormatInt(n, 10))))
	}
	for i := range made {
		if !made[i].Equal(want[i]) {
			t.Fatalf("term %d = %v, want %v", i, made[i], want[i])
		}
	}
	n1, n2, w1, w2 := b.num(123456), b.num(123456), b.str("gpumem"), b.str("gpumem")
	if n1 != n2 || w1 != w2 {
		t.Error("a repeated number or a word made a second term")
	}
	a1, a2, o1, o2 := b.array(), b.array(), b.object(), b.object()
	if a1 != a2 || o1 != o2 || a1.Value.(*ast.Array).Len() != 0 || o1.Value.(ast.Object).Len() != 0 {
		t.Error("the empty array and object are not one shared empty term each")
	}
}
