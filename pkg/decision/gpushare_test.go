package decision

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testquota"
	"github.com/gpuadmit/gpuadmit/pkg/config"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
	"github.com/gpuadmit/gpuadmit/pkg/ledger"
)

// TestGpushare: with devices.gpushare (memoryUnit GiB, its device
// plugin's default) a pod asking aliyun.com/gpu-mem: 8 in a namespace
// whose limits.aliyun.com/gpu-mem is 12 and that uses 6 is denied, in MiB
// (gpushare's unit times 1024), naming the resource; the running pod's
// memory shows on the device its ALIYUN_COM_GPU_MEM_IDX names.
func TestGpushare(t *testing.T) {
	cfg, _, err := config.Parse([]byte("apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\ndevices:\n  gpushare:\n    memoryUnit: GiB\n"))
	if err != nil {
		t.Fatal(err)
	}
	fams := config.Families(cfg)
	if !slices.ContainsFunc(fams, func(f effective.Family) bool { return f.Name == "gpushare" }) {
		t.Fatalf("families %v: gpushare not governed", fams)
	}
	l := ledger.New(ledger.Options{Families: fams, Log: logr.Discard()})
	testns.Known(l, "share")
	l.UpsertQuota(testquota.New("share", "q", map[string]string{"limits.aliyun.com/gpu-mem": "12"}))
	gpuMem := func(gib string) testpod.Opt { return testpod.Res(corev1.ResourceName("aliyun.com/gpu-mem"), gib) }
	running := testpod.New("running").NS("share").App("c", gpuMem("6")).Node("n1").AppRunning("c").Build()
	running.Annotations = map[string]string{devices.GpushareIndexAnnotation: "1"}
	l.UpsertPod(running)
	d, err := New(loadedEngine(t), l, cfg, logr.Discard())
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Decide(context.Background(), Request{Pod: testpod.New("p").NS("share").App("c", gpuMem("8")).Build()})
	if err != nil {
		t.Fatal(err)
	}
	want := `namespace "share": aliyun.com/gpu-mem: pod needs 8192 MiB, 6144 MiB used + 0 MiB reserved, limit 12288 MiB (ResourceQuota "q" limits.aliyun.com/gpu-mem)`
	if res.Allowed || !slices.Equal(res.Denials, []string{want}) {
		t.Errorf("allowed %v, denials %q; want denied with %q", res.Allowed, res.Denials, want)
	}
	if got := res.Effective.Of("gpushare"); got.GPU != 1 || got.MemMiB != 8192 {
		t.Errorf("effective %v, want one shared device with 8192 MiB", res.Effective)
	}
	dev := l.Snapshot(nil).Nodes["n1"].Devices[devices.GpushareDevice(1)]
	if dev.Used.MemMiB != 6144 || dev.Used.GPU != 1 {
		t.Errorf("device %s of n1 uses %v, want the running pod's 6144 MiB", devices.GpushareDevice(1), dev.Used)
	}
	fits, err := d.Decide(context.Background(), Request{Pod: testpod.New("q").NS("share").App("c", gpuMem("6")).Build()})
	if err != nil || !fits.Allowed {
		t.Errorf("6 GiB more (12 of 12): allowed %v, %v %v; want allowed", fits.Allowed, fits.Denials, err)
	}
	if !strings.Contains(strings.Join(fits.Warnings, " "), "aliyun.com/gpu-mem will be at 100 %") {
		t.Errorf("warnings %q, want the near-limit warning for aliyun.com/gpu-mem", fits.Warnings)
	}
}
