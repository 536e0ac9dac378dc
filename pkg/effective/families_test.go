package effective_test

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// famCase is one pod computed in one family: what HAMi's backend books for
// it (want, unres) or the error gpuadmit gives (err, a substring).
type famCase struct {
	name string
	pod  *testpod.Builder
	// dev resolves whole devices and percentages (Options.DeviceMemoryMiB).
	dev      int64
	assigned map[string][]int64
	want     effective.Vector
	unres    bool
	err      string
}

// family returns the family named name of HAMiFamilies (or Gpushare).
func family(t testing.TB, name string) effective.Family {
	t.Helper()
	for _, f := range append(effective.HAMiFamilies(), effective.Gpushare()) {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no family %q", name)
	return effective.Family{}
}

// res sets a limit of any resource.
func res(name, value string) testpod.Opt { return testpod.Res(corev1.ResourceName(name), value) }

// pod is a pod of one app container "c".
func pod(opts ...testpod.Opt) *testpod.Builder { return testpod.New("p").App("c", opts...) }

// runFamily computes every case in the family named name.
func runFamily(t *testing.T, name string, cases []famCase) {
	t.Helper()
	f := family(t, name)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			d, err := effective.Compute(tt.pod.Build(), f, effective.Options{DeviceMemoryMiB: tt.dev, AssignedMemoryMiB: tt.assigned})
			if tt.err != "" {
				var inv *effective.InvalidError
				if !errors.As(err, &inv) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("Compute = %v, want an *InvalidError containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Compute: %v", err)
			}
			if d.Effective != tt.want || (len(d.Unresolved) > 0) != tt.unres {
				t.Errorf("effective %v unresolved %v, want %v unresolved %v", d.Effective, d.Unresolved, tt.want, tt.unres)
			}
		})
	}
}

func TestHAMiFamilies(t *testing.T) {
	fams := effective.HAMiFamilies()
	if fams[0] != effective.Nvidia() {
		t.Errorf("HAMiFamilies()[0] = %+v, want Nvidia()", fams[0])
	}
	if err := effective.ValidateFamilies(fams); err != nil {
		t.Fatalf("ValidateFamilies(HAMiFamilies()): %v", err)
	}
	if err := effective.ValidateFamilies(append(fams, effective.Gpushare())); err != nil {
		t.Fatalf("ValidateFamilies with gpushare: %v", err)
	}
	names := map[string]bool{}
	for _, f := range fams {
		if names[f.Name] {
			t.Errorf("family %q twice", f.Name)
		}
		names[f.Name] = true
		if f.Section == "" || f.AllocAnno == "" {
			t.Errorf("family %q: section %q, allocation annotation %q", f.Name, f.Section, f.AllocAnno)
		}
	}
	for _, want := range []string{"nvidia", "cambricon", "hygon", "metax", "metax-sgpu", "enflame", "enflame-gcu", "mthreads",
		"iluvatar-MR-V100", "iluvatar-MR-V50", "iluvatar-BI-V150", "iluvatar-BI-V100", "kunlun", "kunlun-vxpu", "awsneuron", "amd",
		"vastai", "biren", "ascend-910A", "ascend-910B2", "ascend-910B3", "ascend-910B4-1", "ascend-910B4", "ascend-310P3", "ascend-910C"} {
		if !names[want] {
			t.Errorf("HAMiFamilies has no %q", want)
		}
	}
	if len(fams) != len(names) || len(names) != 25 {
		t.Errorf("%d families, %d names; want 25", len(fams), len(names))
	}
}

func TestValidateFamilies(t *testing.T) {
	nv := effective.Nvidia()
	clash := family(t, "amd")
	clash.Names.Memory = nv.Names.Memory
	noName := family(t, "hygon")
	noName.Name = ""
	tests := []struct {
		fams []effective.Family
		want string
	}{
		{[]effective.Family{nv, nv}, `families 0 and 1 are both named "nvidia"`},
		{[]effective.Family{nv, clash}, `resource "nvidia.com/gpumem" is used by families "nvidia" and "amd"`},
		{[]effective.Family{noName}, "family 0 (hygon): name must not be empty"},
	}
	for _, tt := range tests {
		if err := effective.ValidateFamilies(tt.fams); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ValidateFamilies = %v, want %q", err, tt.want)
		}
	}
}

func TestFamilyValidateSections(t *testing.T) {
	mod := func(name string, f func(*effective.Family)) effective.Family { s := family(t, name); f(&s); return s }
	tests := []struct {
		fam  effective.Family
		want string
	}{
		{mod("ascend-910B2", func(f *effective.Family) { f.Names.Memory = "" }), "vnpus[910B2].resourceMemoryName: must not be empty"},
		{mod("iluvatar-BI-V100", func(f *effective.Family) { f.Names.Cores = f.Names.Count }),
			`iluvatars[BI-V100].resourceCoreName: "iluvatar.ai/BI-V100-vgpu" is already used by iluvatars[BI-V100].resourceCountName`},
		{mod("cambricon", func(f *effective.Family) { f.Names.MemoryPercentage = "x.com/pct" }),
			`cambricon.resourceMemoryPercentageName: must be empty (the backend has no such resource), got "x.com/pct"`},
		{mod("mthreads", func(f *effective.Family) { f.DefaultCores = 17 }), "mthreads.defaultCores: must be within 0..16, got 17"},
		{mod("mthreads", func(f *effective.Family) { f.Templates = [effective.MaxTemplates]effective.Template{} }),
			`mthreads.templates: rule "slices" needs at least one template`},
		{mod("ascend-910A", func(f *effective.Family) { f.Templates[1].MemMiB = 100 }),
			"vnpus[910A].templates[1]: memory must be positive and above the previous template's 2184 MiB, got 100"},
		{mod("ascend-310P3", func(f *effective.Family) { f.MemoryCapacity = 100 }), "vnpus[310P3].memoryCapacity: must be >= the whole device's 21527 MiB"},
		{mod("kunlun", func(f *effective.Family) { f.Rule = "bogus" }), `kunlun: unknown rule "bogus"`},
		{mod("amd", func(f *effective.Family) { f.MinCores = 101 }), "amd.minCores: must be within 0..100, got 101"},
	}
	for _, tt := range tests {
		if err := tt.fam.Validate(); err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v, want %q", tt.fam.Name, err, tt.want)
		}
	}
	for _, f := range append(effective.HAMiFamilies(), effective.Gpushare()) {
		if err := f.Validate(); err != nil {
			t.Errorf("%s: %v", f.Name, err)
		}
	}
}

// TestFamiliesInitAndSidecars: the KEP-753 combination is the same for
// every family; init containers and sidecars combine per dimension.
func TestFamiliesInitAndSidecars(t *testing.T) {
	// Hygon: init 8000 MiB alone before the app; a sidecar beside both.
	runFamily(t, "hygon", []famCase{
		{name: "init peak above steady", // HAMi pkg/device/initContainer.go: init containers run before the apps, their devices are reused
			pod: testpod.New("p").Init("prep", res("hygon.com/dcunum", "1"), res("hygon.com/dcumem", "8000"), res("hygon.com/dcucores", "50")).
				App("app", res("hygon.com/dcunum", "1"), res("hygon.com/dcumem", "2000"), res("hygon.com/dcucores", "60")),
			want: vec(1, 8000, 60)},
		{name: "sidecar runs beside the init and the app", // KEP-753: a sidecar declared first adds to the init peak and the steady state
			pod: testpod.New("p").Sidecar("proxy", res("hygon.com/dcunum", "1"), res("hygon.com/dcumem", "1000"), res("hygon.com/dcucores", "10")).
				Init("prep", res("hygon.com/dcunum", "1"), res("hygon.com/dcumem", "8000"), res("hygon.com/dcucores", "50")).
				App("app", res("hygon.com/dcunum", "1"), res("hygon.com/dcumem", "2000"), res("hygon.com/dcucores", "60")),
			want: vec(2, 9000, 70)},
	})
	// Ascend 910B2: templates rounded per container, then combined.
	runFamily(t, "ascend-910B2", []famCase{
		{name: "init template and app template", // HAMi pkg/device/ascend/device.go MutateAdmission rounds each container on its own
			pod: testpod.New("p").Init("prep", res("huawei.com/Ascend910B2", "1"), res("huawei.com/Ascend910B2-memory", "20000")).
				App("app", res("huawei.com/Ascend910B2", "1"), res("huawei.com/Ascend910B2-memory", "2000")),
			want: vec(1, 32768, 0)},
		{name: "sidecar after the init: steady is sidecar plus app",
			pod: testpod.New("p").Init("prep", res("huawei.com/Ascend910B2", "1"), res("huawei.com/Ascend910B2-memory", "9000")).
				Sidecar("agent", res("huawei.com/Ascend910B2", "1"), res("huawei.com/Ascend910B2-memory", "8000")).
				App("app", res("huawei.com/Ascend910B2", "1"), res("huawei.com/Ascend910B2-memory", "8000")),
			want: vec(2, 16384, 0)},
	})
	// Moore Threads: a whole-card init before a slice app.
	runFamily(t, "mthreads", []famCase{
		{name: "exclusive init, slice app", // HAMi pkg/device/mthreads/device.go MutateAdmission: no memory means the whole card
			pod: testpod.New("p").Init("prep", res("mthreads.com/vgpu", "1")).
				App("app", res("mthreads.com/vgpu", "1"), res("mthreads.com/sgpu-memory", "8"), res("mthreads.com/sgpu-core", "4")),
			want: vec(1, 49152, 16)},
	})
}

// TestFamiliesFieldErrors: every error names the container, the resource
// and the value.
func TestFamiliesFieldErrors(t *testing.T) {
	p := testpod.New("p").App("worker", res("mthreads.com/vgpu", "1"), res("mthreads.com/sgpu-memory", "3")).Build()
	_, err := effective.Compute(p, family(t, "mthreads"), effective.Options{})
	want := `invalid GPU request: container "worker": mthreads.com/sgpu-memory "3": must be one of 2, 4, 8, 16, 32, 64, 96 (units of 512 MiB)`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	var inv *effective.InvalidError
	if !errors.As(err, &inv) || inv.Errors[0].Source != "limits" {
		t.Errorf("error %v does not name the source", err)
	}
}
