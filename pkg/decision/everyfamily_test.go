package decision

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// TestEveryFamilyGoverned: with HAMi's chart-rendered device
// configuration, Ascend and Iluvatar switched on, every HAMi family is governed: for each, a running pod
// asking one device is charged to that family alone, exactly what
// effective computes for it, and a second pod in a namespace whose
// limits.<count name> is 1 is denied with a message naming that resource.
func TestEveryFamilyGoverned(t *testing.T) {
	cfg, _, err := config.Load("../config/testdata/hami-switched-on.yaml")
	if err != nil {
		t.Fatal(err)
	}
	fams := config.Families(cfg)
	if len(fams) != len(effective.HAMiFamilies()) {
		t.Fatalf("%d families governed, want every one of HAMi's %d", len(fams), len(effective.HAMiFamilies()))
	}
	e := loadedEngine(t)
	for _, f := range fams {
		t.Run(f.Name, func(t *testing.T) {
			one := testpod.Res(f.Names.Count, "1")
			running := testpod.New("running").NS("ns").App("c", one).Node("n1").AppRunning("c").Build()
			want, err := effective.ComputeAll(running, fams, nil)
			if err != nil {
				t.Fatal(err)
			}
			n := want.Effective().Of(f.Name).GPU // HAMi's ascend 910C books NPUs in pairs: 2
			l := ledger.New(ledger.Options{Families: fams, Log: logr.Discard()})
			testns.Known(l, "ns")
			l.UpsertQuota(testquota.New("ns", "q", map[string]string{"limits." + string(f.Names.Count): fmt.Sprint(n)}))
			l.UpsertPod(running)
			s := l.Namespace("ns", nil)
			if got := s.Used; n < 1 || !got.Equal(want.Effective()) || got.Families()[0] != f.Name || len(got) != 1 {
				t.Errorf("used %v, want %v: %s devices and nothing else", got, want.Effective(), f.Name)
			}
			if s.Limits[f.Name].GPU == nil || s.Limits[f.Name].GPU.Value != n {
				t.Errorf("limits %v, want limits.%s = %d for %s", s.Limits, f.Names.Count, n, f.Name)
			}
			d, err := New(e, l, cfg, logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			res, err := d.Decide(context.Background(), Request{Pod: testpod.New("second").NS("ns").App("c", one).Build()})
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed || !strings.Contains(strings.Join(res.Denials, "; "), fmt.Sprintf("%s: pod needs %d, %d used + 0 reserved, limit %d", f.Names.Count, n, n, n)) {
				t.Errorf("second pod: allowed %v, denials %q; want denied by limits.%s", res.Allowed, res.Denials, f.Names.Count)
			}
		})
	}
}
