package layering_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// conceptCell is a package named in the first cell of a row of
// docs/design.md's concept table ("| `pkg/x` | one concept |").
var conceptCell = regexp.MustCompile("`((?:pkg|cmd)/[a-z0-9/]+|policy|rego)`")

// TestConceptTableMatchesPackages: the newcomer's map, docs/design.md's
// table of packages (section 1), names every package of pkg/ (a package
// moved, split or added without its row fails here) and nothing that is
// gone.
func TestConceptTableMatchesPackages(t *testing.T) {
	doc, err := os.ReadFile("../../docs/design.md")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for line := range strings.Lines(string(doc)) {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "| `") || len(cells) < 3 {
			continue
		}
		for _, m := range conceptCell.FindAllStringSubmatch(cells[1], -1) {
			named[m[1]] = true
		}
	}
	if len(named) == 0 {
		t.Fatal("docs/design.md: no concept table found (rows \"| `pkg/x` | one concept |\")")
	}
	pkgs := listPackages(t)
	for name := range pkgs {
		if strings.HasPrefix(name, "pkg/") && !named[name] {
			t.Errorf("docs/design.md's concept table has no row for %s: add one saying its one concept", name)
		}
	}
	for name := range named {
		if _, ok := pkgs[name]; !ok {
			t.Errorf("docs/design.md's concept table names %s, which is not a package of the module: fix or remove its row", name)
		}
	}
}
