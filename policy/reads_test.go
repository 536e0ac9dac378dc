package policy_test

import (
	"slices"
	"testing"

	"github.com/gpuadmit/gpuadmit/policy"
)

// TestReads: what a policy set reads of the input is found in its rules,
// every way a rule can reach the input; whatever the analysis cannot follow
// reads everything there (a part left out that a rule reads would let it
// see nothing where a value is, and admit what it should deny).
func TestReads(t *testing.T) {
	builtin := []string{"operation", "namespace", "pod", "claim", "demand", "namespaceUsage", "capacity", "settings", "guard"}
	tests := []struct {
		name     string
		policy   string
		all      bool     // everything is read
		has      []string // first-level keys read
		hasNot   []string
		podAll   bool     // all of input.pod
		podHas   []string // input.pod keys read
		podNot   []string
		labelAll bool // all of input.pod.labels
	}{
		{name: "the built-in policies", has: builtin, hasNot: []string{"userInfo", "namespaceLabels", "dryRun", "apiVersion", "kind"},
			podHas: []string{"name"}, podNot: []string{"labels", "annotations", "uid", "nodeSelector"}},
		{name: "a label rule", policy: costCenter, has: append(builtin, "pod"), hasNot: []string{"userInfo"},
			podHas: []string{"name", "labels"}, podNot: []string{"annotations"}}, // labels["cost-center"] only
		{name: "a key computed at evaluation", policy: "package gpuadmit.admission\ndeny contains k if { some k in [\"labels\"]; input.pod[k].x }\n",
			has: []string{"pod"}, hasNot: []string{"userInfo"}, podAll: true},
		{name: "a key read from the input", policy: "package gpuadmit.admission\ndeny contains \"x\" if input.pod.labels[input.userInfo.username]\n",
			has: []string{"pod", "userInfo"}, hasNot: []string{"namespaceLabels"}, podHas: []string{"labels"}, labelAll: true},
		{name: "the input passed to a builtin", policy: "package gpuadmit.admission\ndeny contains \"x\" if count(object.keys(input)) > 100\n", all: true},
		{name: "the input iterated", policy: "package gpuadmit.admission\ndeny contains k if { some k, _ in input; k == \"x\" }\n", all: true},
		{name: "the input bound to a variable", policy: "package gpuadmit.admission\ndeny contains \"x\" if { x := input; x.userInfo.username == \"a\" }\n", all: true},
		{name: "the input passed to a function", policy: "package gpuadmit.admission\nf(doc) := doc.userInfo.username\ndeny contains \"x\" if f(input) == \"a\"\n", all: true},
		{name: "a part passed to a function", policy: "package gpuadmit.admission\nf(doc) := doc.username\ndeny contains \"x\" if f(input.userInfo) == \"a\"\n",
			has: []string{"userInfo"}, hasNot: []string{"namespaceLabels"}},
		{name: "a with modifier", policy: "package gpuadmit.admission\nd contains \"x\" if input.namespaceLabels.a\ndeny contains m if { some m in d with input.dryRun as true }\n",
			has: []string{"namespaceLabels", "dryRun"}, hasNot: []string{"userInfo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var srcs []policy.Source
			if tt.policy != "" {
				srcs = append(srcs, policy.Map("operators", map[string]string{"p.rego": tt.policy}))
			}
			p, err := loaded(t, srcs...).Prepare()
			if err != nil {
				t.Fatal(err)
			}
			r := p.Reads()
			if r.All() != tt.all {
				t.Fatalf("All() = %v, want %v", r.All(), tt.all)
			}
			check(t, "input", r, tt.has, tt.hasNot)
			if pod := r.Under("pod"); !tt.all {
				if pod.All() != tt.podAll {
					t.Errorf("input.pod: All() = %v, want %v", pod.All(), tt.podAll)
				}
				check(t, "input.pod", pod, tt.podHas, tt.podNot)
				if slices.Contains(tt.podHas, "labels") && pod.Under("labels").All() != tt.labelAll {
					t.Errorf("input.pod.labels: All() = %v, want %v", pod.Under("labels").All(), tt.labelAll)
				}
			}
		})
	}
}

func check(t *testing.T, at string, r *policy.Reads, has, hasNot []string) {
	t.Helper()
	for _, k := range has {
		if !r.Has(k) {
			t.Errorf("%s.%s is not read, want read", at, k)
		}
	}
	for _, k := range hasNot {
		if r.Has(k) {
			t.Errorf("%s.%s is read, want not read", at, k)
		}
	}
}

// TestGuardsTrusted: input.guard's lists are proved against the built-in
// rules as embedded; any other module that may read them (by name, by a
// key computed at evaluation, or through the whole input) makes them
// untrusted, so that the Decider's lists skip no rule.
func TestGuardsTrusted(t *testing.T) {
	tests := []struct {
		name    string
		modules map[string]string
		want    bool
	}{
		{name: "the built-in policies", want: true},
		{name: "an operator's rule reading other parts", want: true,
			modules: map[string]string{"p.rego": "package gpuadmit.admission\ndeny contains \"x\" if input.namespaceLabels.a\n"}},
		{name: "an operator's rule reading a guard", want: false,
			modules: map[string]string{"p.rego": "package gpuadmit.admission\ndeny contains \"x\" if input.guard.overLimit[0]\n"}},
		{name: "an operator's rule reading a key computed at evaluation", want: false,
			modules: map[string]string{"p.rego": "package gpuadmit.admission\ndeny contains k if { some k in [\"guard\"]; input[k].overLimit[0] }\n"}},
		{name: "an operator's rule evaluating the built-in rules with a part of input replaced", want: false,
			modules: map[string]string{"p.rego": "package gpuadmit.admission\ndeny contains m if { some m in data.gpuadmit.builtin.deny with input.teamLimits as [] }\n"}},
		{name: "an operator's rule evaluating with a setting replaced", want: false,
			modules: map[string]string{"p.rego": "package gpuadmit.admission\nwarn contains m if { some m in data.gpuadmit.builtin.warn with input.settings.nearLimitPercent as 5 }\n"}},
		{name: "an operator's rule replacing data, not input", want: true,
			modules: map[string]string{"p.rego": "package gpuadmit.admission\nlimit := 1\ndeny contains \"x\" if { input.namespace == \"a\"; limit == 2 with data.gpuadmit.admission.limit as 2 }\n"}},
		{name: "an operator's rule evaluating with a built-in function replaced", want: false,
			modules: map[string]string{"p.rego": "package gpuadmit.admission\ndeny contains m if { some m in data.gpuadmit.builtin.deny with gt as gte }\n"}},
		{name: "an operator's rule evaluating with a built-in rule replaced", want: false,
			modules: map[string]string{"p.rego": "package gpuadmit.admission\nimport data.gpuadmit.builtin as b\ndeny contains m if { some m in b.deny with b.all_fit as false }\n"}},
		{name: "an operator's rule evaluating with a package above the built-in one replaced", want: false,
			modules: map[string]string{"p.rego": "package gpuadmit.admission\ndeny contains \"x\" if input.namespace == \"a\"\n",
				"q.rego": "package other\ny if { true with data.gpuadmit as {} }\n"}},
		{name: "an operator's module in the built-in package", want: false,
			modules: map[string]string{"extra.rego": "package gpuadmit.builtin\nunsatisfiable contains \"x\" if input.namespace == \"a\"\n"}},
		{name: "an operator's rule reading the whole input", want: false,
			modules: map[string]string{"p.rego": "package gpuadmit.admission\ndeny contains \"x\" if { x := input; x.guard.unfit[0] }\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var srcs []policy.Source
			if tt.modules != nil {
				srcs = append(srcs, policy.Map("operators", tt.modules))
			}
			p, err := loaded(t, srcs...).Prepare()
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Reads().GuardsTrusted(); got != tt.want {
				t.Fatalf("GuardsTrusted() = %v, want %v", got, tt.want)
			}
		})
	}
}
