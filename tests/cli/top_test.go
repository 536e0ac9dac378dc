package cli_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gpuadmit/gpuadmit/internal/cluster/local"
)

// topLine and auditLine are what top and audit say they count with.
const (
	topLine   = "kubectl gpuadmit top: " + noConfig + "\n"
	auditLine = "kubectl gpuadmit audit: " + noConfig + "\n"
)

// topJSON is the part of `gpuadmit top`'s JSON the suite checks: its
// namespaces by name, as usage's and audit's.
type topJSON struct {
	Namespaces map[string]struct {
		Used struct{ GPU, GPUMem int64 }
		Over []struct {
			Resource       string
			Charged, Limit int64
			WhatIf         bool
		}
		Charges []struct {
			Kind, Name, Node string
			Used             struct{ GPU, GPUMem, GPUCores int64 }
		}
	}
	OverNamespaces []string
}

// rows are the rows of a table, their cells separated by one space.
func rows(table string) []string {
	var out []string
	for _, line := range strings.Split(table, "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			out = append(out, strings.Join(f, " "))
		}
	}
	return out
}

// testTopAndAudit: team-a (seeded: server 10240 MiB and small-job 12288
// MiB on node1, a quota of 24576 MiB) through the real kubectl: top lists
// the pods' charges, a what-if under the usage marks team-a over (and
// --fail-over exits 1), and with the quota lowered under the usage audit
// names team-a and exits 1; live answers what a dump of the cluster
// answers.
func (s *suite) testTopAndAudit(t *testing.T) {
	r := s.kubectl(t, nil, "gpuadmit", "top", "-n", local.TeamA)
	want := []string{
		"NAMESPACE PODS GPU GPU% GPUMEM(MiB) GPUMEM% GPUCORES GPUCORES% OVER",
		"team-a 2 2/- - 22528/24576 91% 0/- - -",
		"NAMESPACE KIND NAME NODE STATE GPU GPUMEM(MiB) GPUCORES",
		"team-a Pod small-job node1 full 1 12288 0",
		"team-a Pod server node1 full 1 10240 0",
	}
	if r.code != 0 || r.stderr != topLine || !slices.Equal(rows(r.stdout), want) {
		t.Fatalf("kubectl gpuadmit top -n team-a: exit %d, stderr %q (want %q)\n%s\nwant the rows\n%s", r.code, r.stderr, topLine, r.stdout, strings.Join(want, "\n"))
	}
	whatIf := []string{"gpuadmit", "top", "-n", local.TeamA, "--what-if", "team-a=nvidia.com/gpumem=20000", "-o", "json"}
	r = s.kubectl(t, nil, whatIf...)
	var got topJSON
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("top --what-if: exit %d, stderr %q: %v\n%s", r.code, r.stderr, err, r.stdout)
	}
	if o := got.Namespaces[local.TeamA].Over; len(o) != 1 || o[0].Resource != "nvidia.com/gpumem" || o[0].Charged != 22528 || o[0].Limit != 20000 || !o[0].WhatIf ||
		!slices.Equal(got.OverNamespaces, []string{local.TeamA}) {
		t.Errorf("top --what-if team-a=nvidia.com/gpumem=20000: over %+v, namespaces over %q; want gpumem 22528 of 20000 (what-if)", o, got.OverNamespaces)
	}
	if c := got.Namespaces[local.TeamA].Charges; len(c) != 2 || c[0].Name != "small-job" || c[0].Node != local.NodeName || c[0].Used.GPUMem != 12288 {
		t.Errorf("top --what-if: charges %+v, want small-job's 12288 MiB on node1 first", c)
	}
	if r = s.kubectl(t, nil, append(whatIf, "--fail-over")...); r.code != 1 {
		t.Errorf("top --what-if ... --fail-over: exit %d, want 1; stderr %q", r.code, r.stderr)
	}

	s.setQuota(t, local.TeamA, "16384")
	r = s.kubectl(t, nil, "gpuadmit", "audit")
	if want := "team-a nvidia.com/gpumem 22528 0 16384 gpu-quota"; r.code != 1 || r.stderr != auditLine || !slices.Contains(rows(r.stdout), want) {
		t.Errorf("kubectl gpuadmit audit: exit %d, stderr %q\n%s\nwant exit 1 and the row %q", r.code, r.stderr, r.stdout, want)
	}
	if r = s.kubectl(t, nil, "gpuadmit", "top", "-n", local.TeamA, "--fail-over"); r.code != 1 || !strings.Contains(r.stdout, "22528/16384") {
		t.Errorf("top --fail-over over the lowered quota: exit %d\n%s", r.code, r.stdout)
	}
	s.testTopLiveIsTheDump(t)
}

// testTopLiveIsTheDump: top and audit print, reading the cluster, exactly
// what they print with --state on a dump of it.
func (s *suite) testTopLiveIsTheDump(t *testing.T) {
	state := s.dump(t)
	for _, tt := range []struct {
		args []string
		code int
	}{
		{args: []string{"top", "-A", "-o", "json"}},
		{args: []string{"top", "-n", local.TeamA}},
		{args: []string{"top", "-n", local.TeamA, "-o", "wide", "--what-if", "team-a=nvidia.com/gpumem=30000", "--sort-by", "name"}},
		{args: []string{"top", "-A", "--sort-by", "percent", "--fail-over"}, code: 1},
		{args: []string{"audit", "-o", "json"}, code: 1},
		{args: []string{"audit", "-n", teamB}},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			line := topLine
			if tt.args[0] == "audit" {
				line = auditLine
			}
			live := s.plugin(t, tt.args...)
			fromDump := s.plugin(t, append(tt.args, "--state", state)...)
			if live.code != tt.code || fromDump.code != tt.code || live.stderr != line || fromDump.stderr != "" {
				t.Fatalf("live: exit %d, stderr %q (want %q); --state: exit %d, stderr %q; want exit %d",
					live.code, live.stderr, line, fromDump.code, fromDump.stderr, tt.code)
			}
			if live.stdout != fromDump.stdout {
				t.Errorf("live:\n%s\n--state on a dump:\n%s", live.stdout, fromDump.stdout)
			}
		})
	}
}

// setQuota sets the gpumem limit of ns's seeded quota, and sets it back
// when the test ends.
func (s *suite) setQuota(t *testing.T, ns, gpumem string) {
	t.Helper()
	api := s.c.Kube.CoreV1().ResourceQuotas(ns)
	set := func(ctx context.Context, v resource.Quantity) error {
		q, err := api.Get(ctx, local.QuotaName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		q.Spec.Hard["limits.nvidia.com/gpumem"] = v
		_, err = api.Update(ctx, q, metav1.UpdateOptions{})
		return err
	}
	q, err := api.Get(t.Context(), local.QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := q.Spec.Hard["limits.nvidia.com/gpumem"]
	t.Cleanup(func() {
		if err := set(context.WithoutCancel(t.Context()), before); err != nil {
			t.Errorf("setting quota %s/%s back: %v", ns, local.QuotaName, err)
		}
	})
	if err := set(t.Context(), resource.MustParse(gpumem)); err != nil {
		t.Fatal(err)
	}
}
