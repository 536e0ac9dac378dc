package ledger

import (
	"fmt"
	"testing"

	"github.com/go-logr/logr/testr"

	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/effective"
)

// nvidia is the name of the nvidia family (effective.Nvidia().Name).
const nvidia = "nvidia"

// The second family of the multi-family tests: Huawei's Ascend 910B2 NPU as
// HAMi's ascend backend names it (no memory percentage resource).
const (
	ascendName  = "ascend-910B2"
	ascendCount = corev1.ResourceName("huawei.com/Ascend910B2")
	ascendMem   = corev1.ResourceName("huawei.com/Ascend910B2-memory")
	ascendCores = corev1.ResourceName("huawei.com/Ascend910B2-core")
)

func ascendFamily() effective.Family {
	return effective.Family{
		Name:          ascendName,
		Names:         effective.ResourceNames{Count: ascendCount, Memory: ascendMem, Cores: ascendCores},
		DefaultGPUNum: 1,
		MemoryFactor:  1,
	}
}

// twoFamilies are the families of a ledger reading nvidia and Ascend pods.
func twoFamilies() []effective.Family {
	return []effective.Family{effective.Nvidia(), ascendFamily()}
}

// newTwoFamilyLedger is newLedger with the Ascend family beside nvidia.
func newTwoFamilyLedger(t *testing.T) *Ledger {
	return New(Options{Families: twoFamilies(), Log: testr.New(t)})
}

// npu, npuMem and npuCores are the Ascend counterparts of gpu, mem and cores.
func npu(n int64) testpod.Opt      { return testpod.Res(ascendCount, fmt.Sprint(n)) }
func npuMem(n int64) testpod.Opt   { return testpod.Res(ascendMem, fmt.Sprint(n)) }
func npuCores(n int64) testpod.Opt { return testpod.Res(ascendCores, fmt.Sprint(n)) }

// nv is the usage holding vec(g, m, c) for the nvidia family alone (nil
// for a zero vector: a Usage holds no zero vectors).
func nv(g, m, c int64) effective.Usage { return effective.UsageOf(nvidia, vec(g, m, c)) }

// asc is the usage holding vec(g, m, c) for the Ascend family alone.
func asc(g, m, c int64) effective.Usage { return effective.UsageOf(ascendName, vec(g, m, c)) }

// same reports whether got holds exactly the families and vectors of want
// (Usage.Equal) and no zero vector or negative dimension.
func same(got, want effective.Usage) bool { return usageInvariant(got) == nil && got.Equal(want) }

// plus is a + b (the families of both).
func plus(t testing.TB, a, b effective.Usage) effective.Usage {
	t.Helper()
	s, ok := a.Add(b)
	if !ok {
		t.Fatalf("%v + %v overflows", a, b)
	}
	return s
}

// nvOnly returns the nvidia vector of u and fails t when u holds another
// family or a zero vector (a Usage holds the non-zero vectors only): what a
// Vector compared before families is u's nvidia vector, and nothing else.
func nvOnly(t testing.TB, u effective.Usage) effective.Vector {
	t.Helper()
	if err := usageInvariant(u); err != nil {
		t.Errorf("usage %v: %v", u, err)
	}
	for f := range u {
		if f != nvidia {
			t.Errorf("usage %v holds family %q; want nvidia only", u, f)
		}
	}
	return u.Of(nvidia)
}

// usageInvariant checks that u holds no zero vector and nothing negative.
func usageInvariant(u effective.Usage) error {
	for f, v := range u {
		if v.IsZero() {
			return fmt.Errorf("family %q holds a zero vector", f)
		}
		if err := nonNegative(v); err != nil {
			return fmt.Errorf("family %q: %w", f, err)
		}
	}
	return nil
}
