// Package layering_test holds the project's layering, in one place: the
// table below says, for every package of pkg/ and cmd/ (and policy, rego,
// manifests), what it may NOT depend on. The request path goes one way,
// down:
//
//	pkg/server -> pkg/admission -> pkg/admitqueue (the admission rounds) -> pkg/decision -> pkg/ledger -> pkg/reservation -> pkg/effective
//
// with pkg/membership beside pkg/admitqueue; a package may depend on the ones
// below it, never on one above. The API types (pkg/apis/...) are a leaf
// every layer may import: they import nothing of the project but pkg/apis.
// What ships (pkg/, policy, rego, manifests and the three production
// commands) depends on no test support (internal/), no build tooling
// (hack/), no test suite (tests/) and no other command (cmd/).
//
// The dependencies are the transitive ones of the production build (go list
// -deps), so an edge that climbs through a third package fails too. The
// tests' own imports are checked where a row says so (testsMayNot: direct
// imports of the package's _test.go files). A package without a row fails
// the test with the row to add.
package layering_test

import (
	"os/exec"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/gpuadmit/gpuadmit/"

// rule is one row of the table: what pkg (a package, relative to the
// module; "x/..." for x and every package under it) may not depend on.
// Each entry of mayNot names a package and every package under it ("pkg/"
// is all of pkg/); but names the exceptions to mayNot (testsBut those to
// testsMayNot).
type rule struct {
	pkg         string
	mayNot      []string
	but         []string
	testsMayNot []string // direct imports of its _test.go files
	testsBut    []string // the exceptions to testsMayNot
	why         string
}

// The project's top-level trees: "nothing of the project".
var project = []string{"pkg/", "cmd/", "internal/", "hack/", "tests/", "policy", "rego", "manifests/"}

// The layers of the request path, top first.
var (
	aboveAdmission  = []string{"pkg/server"}
	aboveQueue      = append([]string{"pkg/admission"}, aboveAdmission...)
	aboveDecision   = append([]string{"pkg/admitqueue", "pkg/membership"}, aboveQueue...)
	aboveLedger     = append([]string{"pkg/decision"}, aboveDecision...)
	requestPath     = append([]string{"pkg/ledger", "policy"}, aboveLedger...)
	notShipped      = []string{"internal/", "hack/", "tests/", "cmd/"}
	shippedCommands = []string{"cmd/webhook", "cmd/gpuadmit", "cmd/nvml-agent"}
)

func list(groups ...[]string) []string { return slices.Concat(groups...) }

// rules is the layering: one row per package.
var rules = []rule{
	// The bottom and the leaves.
	{pkg: "pkg/effective", mayNot: project, testsMayNot: project, testsBut: []string{"pkg/effective", "internal/fixtures/"},
		why: "the bottom layer: pure functions of demand and lifecycle; its tests use only the shared fixtures (internal/fixtures)"},
	{pkg: "pkg/apis/...", mayNot: project, but: []string{"pkg/apis/"},
		why: "the API types are a leaf every layer may import (defaults and decoding live in pkg/config)"},
	{pkg: "pkg/resourceversion", mayNot: project, why: "the one reading of a resourceVersion as an order"},
	{pkg: "pkg/certs", mayNot: project, why: "serving certificates, nothing of admission"},
	{pkg: "pkg/manifest", mayNot: project, but: []string{"pkg/workload"}, why: "the objects of a manifest file, read for the command line (a workload's pod template as pkg/workload reads it for the webhook)"},
	{pkg: "pkg/workload", mayNot: project, why: "a workload object's pod sets: pure reading of the object, for the webhook and the command line alike"},
	{pkg: "pkg/serving", mayNot: project, testsMayNot: list(requestPath, []string{"pkg/config"}),
		why: "the HTTPS server knows nothing of admission: it only bounds and authenticates"},
	{pkg: "rego", mayNot: project, why: "the embedded policies"},
	{pkg: "manifests/webhook", mayNot: project, why: "the webhook's manifests, embedded in the command line"},
	// Beside pkg/effective: translation of what the cluster wrote.
	{pkg: "pkg/dra", mayNot: project, but: []string{"pkg/effective"},
		why: "a claim's demand: pure translation beside pkg/effective"},
	{pkg: "pkg/devices", mayNot: project, but: []string{"pkg/effective"},
		why: "the annotation codecs: translation beside pkg/effective"},
	{pkg: "pkg/quotacheck", mayNot: project, but: []string{"pkg/effective"},
		why: "reading a ResourceQuota's GPU limits as written: pure, beside pkg/effective"},
	{pkg: "pkg/config", mayNot: requestPath,
		why: "the configuration sits below the ledger: every layer reads it"},
	// The request path, bottom up.
	{pkg: "pkg/reservation", mayNot: list([]string{"pkg/ledger", "pkg/feed", "pkg/podwire", "pkg/openreports", "pkg/clusterstate", "pkg/summary"}, requestPath[1:]),
		why: "the reservation concept (its type, counting rule, validation, assumed copies) sits below the ledger, which counts what it is handed"},
	{pkg: "pkg/summary", mayNot: list([]string{"pkg/admitqueue", "pkg/membership"}, aboveQueue, []string{"pkg/decision", "policy"}),
		why: "the summaries users read (GPUUsage): an output of the ledger and the reservations, nothing on the request path"},
	{pkg: "pkg/ledger", mayNot: list([]string{"pkg/feed", "pkg/podwire"}, requestPath[1:]),
		why: "the accounting: objects in, usage out; the watches (pkg/feed) and the Pod wire decoder (pkg/podwire) feed it, it knows neither (TestAccountingIsPure)"},
	{pkg: "pkg/podwire", mayNot: list([]string{"pkg/ledger", "pkg/feed"}, requestPath[1:]),
		why: "the Pod wire decoder keeps what the accounting reads; it knows neither the accounting nor the watches"},
	{pkg: "pkg/burn", mayNot: project, but: []string{"pkg/effective"},
		why: "the burn rule: what a pod or claim burns over time and the budgets' windows, pure, beside pkg/effective"},
	{pkg: "pkg/budget", mayNot: list([]string{"pkg/ledger", "pkg/feed", "pkg/podwire", "pkg/summary", "pkg/openreports", "pkg/membership"}, requestPath[1:]),
		why: "the budgets' accrual: fed the pods beside the ledger (pkg/server wires it into the feed's Sink), read by the decision through an interface of its own; it knows neither the ledger nor the watches"},
	{pkg: "pkg/feed", mayNot: requestPath,
		why: "the watches deliver to a Sink of their own (the ledger implements it; pkg/server wires them): nothing of the request path"},
	{pkg: "policy", mayNot: project, but: []string{"rego"},
		why: "the OPA engine knows nothing of the ledger or the decision (pkg/decision joins them)"},
	{pkg: "pkg/openreports", mayNot: list(aboveLedger, []string{"policy"}),
		why: "the Reports are an output of the ledger, beside the summaries: nothing on the request path above it"},
	{pkg: "pkg/decision", mayNot: aboveDecision,
		why: "the decision is handed the reservations (Request.Reservations); it knows nothing of the replicas"},
	{pkg: "pkg/stamp", mayNot: project, why: "the requesting-user stamp: signing, verifying and who a pod is charged to, nothing of the request path"},
	{pkg: "pkg/gang", mayNot: project, but: []string{"pkg/apis/"},
		why: "a pod's gang and the PodGroups: read off the pod and the PodGroup informer, nothing of the decision or the reservations"},
	{pkg: "pkg/absence", mayNot: list([]string{"pkg/ledger", "pkg/feed", "pkg/podwire", "pkg/summary", "pkg/membership", "pkg/decision", "pkg/admitqueue", "policy"}, aboveQueue),
		why: "absence confirmation reads pods and claims for the admission queues, handed what it needs: it knows neither the queues nor the ledger"},
	{pkg: "pkg/admitqueue", mayNot: list([]string{"pkg/membership"}, aboveQueue),
		why: "the reservations decide through pkg/decision, below; they name what they need of the replicas (Membership)"},
	{pkg: "pkg/membership", mayNot: list([]string{"pkg/admitqueue", "pkg/decision", "policy"}, aboveQueue),
		why: "what the replicas know of each other knows nothing of reservations or decisions"},
	{pkg: "pkg/workloadcheck", mayNot: aboveDecision, why: "the verdict on a workload decides through pkg/decision's demand and limits; the handler and the command line call it"},
	{pkg: "pkg/admission", mayNot: aboveAdmission, why: "the admission handlers sit below the wiring"},
	// The rooms pkg/server wires: below the wiring, beside the handlers;
	// they never reach back up. The collectors read the ledger and the
	// reservations, the others only what they are handed.
	{pkg: "pkg/metrics", mayNot: list([]string{"pkg/membership"}, aboveQueue),
		why: "the Prometheus collectors read the ledger and the reservations, never the handlers"},
	{pkg: "pkg/forward", mayNot: requestPath, why: "the peer-forwarding proxy knows nothing of decisions or reservations"},
	{pkg: "pkg/policysync", mayNot: list([]string{"pkg/ledger"}, aboveLedger), why: "the policy ConfigMap sync feeds the engine only"},
	{pkg: "pkg/events", mayNot: list([]string{"pkg/", "policy"}), why: "the denials' Events: client-go's recorder, nothing of the project"},
	{pkg: "pkg/election", mayNot: list([]string{"pkg/", "policy"}), why: "the Lease-elected runner, nothing of the project"},
	{pkg: "pkg/webhookcheck", mayNot: list([]string{"pkg/ledger", "policy"}, aboveLedger), why: "the webhook configuration's checks: nothing of the request path"},
	{pkg: "pkg/server", why: "the webhook's wiring: the top of the request path"},
	// Beside the request path: what the command line and the node read.
	{pkg: "pkg/policysource", mayNot: list([]string{"pkg/ledger"}, aboveLedger),
		why: "where the policies come from (ConfigMaps, a directory): nothing of the request path but the engine"},
	{pkg: "pkg/matchcond", mayNot: requestPath, why: "the webhooks' matchConditions, evaluated offline for the command line"},
	{pkg: "pkg/clusterstate", mayNot: list([]string{"pkg/membership", "pkg/serving"}, aboveQueue),
		why: "the cluster as the command line reads it: no webhook, no replicas"},
	{pkg: "pkg/nodeagent", mayNot: project, but: []string{"pkg/devices", "pkg/effective"},
		why: "the node agent publishes devices; it knows nothing of admission and links no NVML"},
	{pkg: "pkg/nvmldiscovery", mayNot: project, but: []string{"pkg/devices", "pkg/effective", "pkg/nvmldiscovery/"},
		why: "NVML discovery, for the node agent only"},
	{pkg: "pkg/nvmldiscovery/nvmlmock", mayNot: project, why: "a fake NVML for the agent's dry runs"},
	// The commands.
	{pkg: "cmd/webhook", why: "the webhook binary: wiring of pkg/server (its fault-injection flags come only with the gpuadmit_testhooks tag)"},
	{pkg: "cmd/gpuadmit/...", mayNot: []string{"pkg/server", "pkg/admission", "pkg/serving", "pkg/membership"},
		why: "the command line decides offline through pkg/decision: it runs no webhook"},
	{pkg: "cmd/nvml-agent", mayNot: requestPath, why: "the node agent binary knows nothing of admission"},
	{pkg: "cmd/demo", mayNot: []string{"hack/", "tests/"}, why: "a demo (not shipped): it may use the test harnesses of internal/"},
	{pkg: "cmd/demo-ha", mayNot: []string{"hack/", "tests/"}, why: "a demo (not shipped): it may use the test harnesses of internal/"},
	{pkg: "cmd/loadgen", mayNot: []string{"hack/", "tests/"}, why: "a load generator (not shipped): it may use the test harnesses of internal/"},
}

// covered are the trees every package of which needs a row.
var covered = []string{"pkg/", "cmd/", "policy", "rego", "manifests/"}

// pkgInfo is what go list says of one package of the module.
type pkgInfo struct {
	deps    []string // transitive, production build, relative to the module
	testImp []string // direct imports of its _test.go files
}

// TestLayering checks every package of the module against its row.
func TestLayering(t *testing.T) {
	pkgs := listPackages(t)
	used := map[string]bool{}
	for _, name := range sortedKeys(pkgs) {
		if !under(name, covered) {
			continue
		}
		r, ok := ruleFor(name)
		if !ok {
			t.Errorf("%s has no row in hack/layering's table (var rules in layering_test.go): add one saying what it may not depend on, e.g.\n"+
				"\t{pkg: %q, mayNot: %#v, why: \"<what %s is, in one line>\"},\n"+
				"(mayNot there lists the packages of pkg/ and policy that depend on %s today, which it must never depend on back;\n"+
				"add the layers above it that none of them covers, or `project, but: []string{...}` for a leaf; \"x/...\" names a whole tree)",
				name, name, dependents(pkgs, name), name, name)
			continue
		}
		used[r.pkg] = true
		mayNot, but := r.mayNot, r.but
		if under(name, []string{"pkg/", "policy", "rego", "manifests/"}) || under(name, shippedCommands) {
			mayNot = list(mayNot, notShipped)
		}
		// A command's own packages (cmd/gpuadmit/app/...) are the command.
		for _, c := range shippedCommands {
			if under(name, []string{c}) {
				but = list(but, []string{c + "/"})
			}
		}
		for _, dep := range pkgs[name].deps {
			if dep != name && forbidden(dep, mayNot, but) {
				t.Errorf("%s depends on %s (go list -deps %s): its row forbids it: %s", name, dep, name, r.why)
			}
		}
		for _, imp := range pkgs[name].testImp {
			if imp != name && forbidden(imp, r.testsMayNot, r.testsBut) {
				t.Errorf("%s's tests import %s: its row forbids it: %s", name, imp, r.why)
			}
		}
	}
	for _, r := range rules {
		if !used[r.pkg] {
			t.Errorf("hack/layering's row for %s matches no package: remove it (or fix its name)", r.pkg)
		}
	}
}

// TestRulesSeeAClimb feeds the checks a made-up edge per kind of rule, so
// that a table that matches nothing cannot pass.
func TestRulesSeeAClimb(t *testing.T) {
	for _, tc := range []struct{ pkg, dep string }{
		{"pkg/apis/config/v1alpha1", "pkg/effective"},
		{"pkg/effective", "pkg/devices"},
		{"pkg/ledger", "pkg/admitqueue"},
		{"pkg/decision", "pkg/admission"},
		{"pkg/dra", "pkg/config"},
	} {
		r, ok := ruleFor(tc.pkg)
		if !ok || !forbidden(tc.dep, r.mayNot, r.but) {
			t.Errorf("%s -> %s is not forbidden", tc.pkg, tc.dep)
		}
	}
	if r, _ := ruleFor("pkg/apis/config/v1alpha1"); forbidden("pkg/apis/gpuadmit/v1alpha1", r.mayNot, r.but) {
		t.Error("pkg/apis may import pkg/apis")
	}
	if forbidden("pkg/ledgerx", []string{"pkg/ledger"}, nil) || !forbidden("pkg/ledger/feed", []string{"pkg/ledger"}, nil) {
		t.Error("an entry names a package and what is under it, not a prefix of a name")
	}
}

// listPackages runs go list once over the module.
func listPackages(t *testing.T) map[string]pkgInfo {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{"\t"}}{{join .Deps " "}}{{"\t"}}{{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	pkgs := map[string]pkgInfo{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSuffix(line, "\n"), "\t")
		if len(f) != 3 {
			t.Fatalf("go list: unexpected line %q", line)
		}
		name, ok := strings.CutPrefix(f[0], module)
		if !ok {
			continue
		}
		pkgs[name] = pkgInfo{deps: ours(f[1]), testImp: ours(f[2])}
	}
	if len(pkgs) < len(rules) {
		t.Fatalf("go list found %d packages of the module", len(pkgs))
	}
	return pkgs
}

// ours keeps the module's packages of a space-separated list, relative.
func ours(s string) []string {
	var out []string
	for _, p := range strings.Fields(s) {
		if rel, ok := strings.CutPrefix(p, module); ok {
			out = append(out, rel)
		}
	}
	return out
}

// ruleFor is name's row: its own, else the longest "x/..." row above it.
func ruleFor(name string) (rule, bool) {
	var best rule
	found := false
	for _, r := range rules {
		if r.pkg == name {
			return r, true
		}
		if tree, ok := strings.CutSuffix(r.pkg, "/..."); ok && (name == tree || strings.HasPrefix(name, tree+"/")) &&
			(!found || len(r.pkg) > len(best.pkg)) {
			best, found = r, true
		}
	}
	return best, found
}

// forbidden: dep is under an entry of mayNot and under none of but.
func forbidden(dep string, mayNot, but []string) bool {
	return under(dep, mayNot) && !under(dep, but)
}

// under: pkg is one of entries or below one ("pkg/" and "pkg" both name
// every package of pkg/).
func under(pkg string, entries []string) bool {
	for _, e := range entries {
		e = strings.TrimSuffix(e, "/")
		if pkg == e || strings.HasPrefix(pkg, e+"/") {
			return true
		}
	}
	return false
}

// dependents are the packages of pkg/ and policy that depend on name.
func dependents(pkgs map[string]pkgInfo, name string) []string {
	out := []string{}
	for _, p := range sortedKeys(pkgs) {
		if p != name && under(p, []string{"pkg/", "policy"}) && slices.Contains(pkgs[p].deps, name) {
			out = append(out, p)
		}
	}
	return out
}

func sortedKeys(m map[string]pkgInfo) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestAccountingIsPure: the accounting (pkg/ledger) takes objects in and
// hands usage out; it carries no API client, no informer machinery and no
// protobuf decoder of its own (those are pkg/feed's and pkg/podwire's), so
// a client-go or k8s.io/api upgrade lands in the feed, not in the counting.
func TestAccountingIsPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", module+"pkg/ledger").Output()
	if err != nil {
		t.Fatalf("go list -deps pkg/ledger: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps pkg/ledger listed nothing")
	}
	banned := []string{
		"k8s.io/client-go/",
		"k8s.io/apimachinery/pkg/runtime/serializer/protobuf",
		module + "pkg/feed",
		module + "pkg/podwire",
	}
	for _, dep := range deps {
		for _, b := range banned {
			if strings.HasPrefix(dep, b) {
				t.Errorf("pkg/ledger depends on %s: the accounting must not watch or decode (pkg/feed, pkg/podwire do)", dep)
			}
		}
	}
}
