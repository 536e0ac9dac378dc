package main

import (
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The trust table is docs/design.md §11: one row per input, its columns the
// input, who can write it, what gpuadmit trusts it for, and the tests that
// attack it. These tests keep it complete: every object kind, annotation
// and field the webhook's watches and reviews read (derived from the code
// and the deployment in trust_inputs_test.go and trust_fields_test.go, not
// from a list kept here) has its row, and every row names tests that exist.

const designDoc = "../../docs/design.md"

// trustRow is one row of the trust table.
type trustRow struct {
	input, writer, trust, attackedBy string
}

// trustRows reads the table of design.md's section 11.
func trustRows(t *testing.T) []trustRow {
	t.Helper()
	raw, err := os.ReadFile(designDoc)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "\n## 11.")
	end := strings.Index(doc, "\n## 12.")
	if start < 0 || end < start {
		t.Fatal("docs/design.md has no section 11 followed by a section 12")
	}
	var rows []trustRow
	header := true
	for line := range strings.SplitSeq(doc[start:end], "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := splitRow(line)
		if header {
			want := []string{"input", "who can write it", "what gpuadmit trusts it for", "attacked by"}
			if !slices.Equal(cells, want) {
				t.Fatalf("the trust table's columns are %q, want %q", cells, want)
			}
			header = false
			continue
		}
		if strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			continue // the separator
		}
		if len(cells) != 4 {
			t.Errorf("trust table row with %d cells, want 4: %s", len(cells), line)
			continue
		}
		rows = append(rows, trustRow{input: cells[0], writer: cells[1], trust: cells[2], attackedBy: cells[3]})
	}
	if len(rows) == 0 {
		t.Fatal("the trust table has no rows")
	}
	return rows
}

// splitRow splits a Markdown table row on its unescaped pipes.
func splitRow(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(strings.TrimSuffix(line, "|"), "|")
	var cells []string
	var cell strings.Builder
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && i+1 < len(line) && line[i+1] == '|':
			cell.WriteByte('|')
			i++
		case line[i] == '|':
			cells = append(cells, strings.TrimSpace(cell.String()))
			cell.Reset()
		default:
			cell.WriteByte(line[i])
		}
	}
	return append(cells, strings.TrimSpace(cell.String()))
}

var backticked = regexp.MustCompile("`([^`]+)`")

// codeSpans returns the backticked spans of s.
func codeSpans(s string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// namesKind reports whether an input cell names kind (its Kubernetes
// spelling, as a word, plural or possessive allowed).
func namesKind(cell, kind string) bool {
	return regexp.MustCompile(`(^|[^A-Za-z])` + regexp.QuoteMeta(kind) + `(s|'s)?([^A-Za-z]|$)`).MatchString(cell)
}

// TestTrustTableCoversEveryKind: every kind gpuadmit reads (its RBAC
// read grants, its informers, the objects its webhooks review) is named in
// the input cell of a row.
func TestTrustTableCoversEveryKind(t *testing.T) {
	rows := trustRows(t)
	for kind, why := range readKinds(t) {
		if !slices.ContainsFunc(rows, func(r trustRow) bool { return namesKind(r.input, kind) }) {
			t.Errorf("gpuadmit reads %s (%s) but no row of docs/design.md §11 names it in its input cell", kind, why)
		}
	}
}

// TestTrustTableCoversEveryAnnotation: every annotation gpuadmit reads (the
// annotation constants of its packages, every family's node and pod
// annotations, the watch's bookmark annotation) matches a backticked key
// (a glob: hami.io/node-*-register) in the input cell of a row.
func TestTrustTableCoversEveryAnnotation(t *testing.T) {
	rows := trustRows(t)
	for key, why := range readAnnotations(t) {
		covered := slices.ContainsFunc(rows, func(r trustRow) bool {
			return slices.ContainsFunc(codeSpans(r.input), func(p string) bool {
				ok, err := path.Match(p, key)
				return err == nil && ok
			})
		})
		if !covered {
			t.Errorf("gpuadmit reads the annotation %s (%s) but no row of docs/design.md §11 names it (or a pattern of it) in backticks in its input cell", key, why)
		}
	}
}

// TestTrustTableCoversEveryField: every field the watches keep of an object
// (what their transforms leave of a fully filled one: the ledger can read
// nothing else) is named in backticks, or under a backticked prefix
// (`spec` covers spec.devices), in a row naming its kind.
func TestTrustTableCoversEveryField(t *testing.T) {
	rows := trustRows(t)
	for kind, fields := range keptFields(t) {
		var spans []string
		for _, r := range rows {
			if namesKind(r.input, kind) {
				spans = append(spans, codeSpans(r.input)...)
			}
		}
		for _, f := range fields {
			if !slices.ContainsFunc(spans, func(s string) bool { return s == f || strings.HasPrefix(f, s+".") }) {
				t.Errorf("the %s watch keeps %s but no row naming %s names it (or a prefix) in backticks in its input cell", kind, f, kind)
			}
		}
	}
}

// TestTrustTableRowsNameTheirAttacks: every row's "attacked by" cell names
// at least one test in backticks (Go `TestX` or `BenchmarkX`, optionally
// `TestX/subtest`; Rego `test_x`), and each exists in the repository.
func TestTrustTableRowsNameTheirAttacks(t *testing.T) {
	defined := definedTests(t)
	for _, r := range trustRows(t) {
		var named []string
		for _, s := range codeSpans(r.attackedBy) {
			if testName.MatchString(s) {
				named = append(named, s)
			}
		}
		if len(named) == 0 {
			t.Errorf("row %q names no attack test in backticks in its attacked-by cell", r.input)
		}
		for _, n := range named {
			if !defined[strings.SplitN(n, "/", 2)[0]] {
				t.Errorf("row %q names %s, which no _test.go or .rego file of the repository defines", r.input, n)
			}
		}
	}
}

var (
	testName    = regexp.MustCompile(`^((Test|Benchmark)[A-Z0-9_]\w*(/\S+)?|test_\w+)$`)
	goTestFunc  = regexp.MustCompile(`(?m)^func ((?:Test|Benchmark)\w+)\(`)
	regoTestDef = regexp.MustCompile(`(?m)^(test_\w+)\b`)
)

// definedTests lists the Go tests and benchmarks and the Rego tests of the
// repository.
func definedTests(t *testing.T) map[string]bool {
	t.Helper()
	defined := map[string]bool{}
	err := filepath.WalkDir("../..", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		var re *regexp.Regexp
		switch {
		case strings.HasSuffix(p, "_test.go"):
			re = goTestFunc
		case strings.HasSuffix(p, ".rego"):
			re = regoTestDef
		default:
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllSubmatch(b, -1) {
			defined[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return defined
}
