package effective_test

import (
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
)

// The RuleShare backends: a count, memory per device (or the whole device)
// and cores per device. Each case names the HAMi behaviour it matches.

const card = 24576 // the device size whole devices resolve against

func TestFamilyNvidia(t *testing.T) {
	runFamily(t, "nvidia", []famCase{
		{name: "default_use", // HAMi examples/nvidia/default_use.yaml; pkg/device/nvidia/device.go GenerateResourceRequests
			pod:  pod(res("nvidia.com/gpu", "1"), res("nvidia.com/gpumem", "3000"), res("nvidia.com/gpucores", "30")),
			want: vec(1, 3000, 30)},
		{name: "use_exclusive_card", // HAMi examples/nvidia/use_exclusive_card.yaml: 100 % of two cards
			pod: pod(res("nvidia.com/gpu", "2"), res("nvidia.com/gpumem-percentage", "100"), res("nvidia.com/gpucores", "100")),
			dev: card, want: vec(2, 2*card, 200)},
		{name: "use_memory_fraction", // HAMi examples/nvidia/use_memory_fraction.yaml: Fit books Totalmem*50/100
			pod: pod(res("nvidia.com/gpu", "2"), res("nvidia.com/gpumem-percentage", "50"), res("nvidia.com/gpucores", "30")),
			dev: card, want: vec(2, card, 60)},
	})
}

func TestFamilyCambricon(t *testing.T) {
	runFamily(t, "cambricon", []famCase{
		{name: "count, memory and cores", // HAMi pkg/device/cambricon Test_GenerateResourceRequests: vmemory 1000 books 256000 MiB, vcore 2
			pod:  pod(res("cambricon.com/vmlu", "1"), res("cambricon.com/mlu.smlu.vmemory", "1000"), res("cambricon.com/mlu.smlu.vcore", "2")),
			want: vec(1, 256000, 2)},
		{name: "no cores: 100", // Test_GenerateResourceRequests "resourcememoryname don't set": Coresreq 100
			pod:  pod(res("cambricon.com/vmlu", "1"), res("cambricon.com/mlu.smlu.vmemory", "1000")),
			want: vec(1, 256000, 100)},
		{name: "no memory: the whole card", // Test_GenerateResourceRequests "resourcecoresname don't set": MemPercentagereq 100
			pod: pod(res("cambricon.com/vmlu", "1"), res("cambricon.com/mlu.smlu.vcore", "2")),
			dev: card, want: vec(1, card, 2)},
		{name: "allocate_whole", // HAMi examples/mlu/allocate_whole.yaml: a bare vmlu is a whole MLU
			pod: pod(res("cambricon.com/vmlu", "1")), dev: card, want: vec(1, card, 100)},
		{name: "default_use", // HAMi examples/mlu/default_use.yaml (chart names): 20 units of 256 MiB, 10 cores
			pod:  pod(res("cambricon.com/vmlu", "1"), res("cambricon.com/mlu.smlu.vmemory", "20"), res("cambricon.com/mlu.smlu.vcore", "10")),
			want: vec(1, 5120, 10)},
		{name: "memory without a count books nothing", // GenerateResourceRequests returns Nums 0 without the count
			pod: pod(res("cambricon.com/mlu.smlu.vmemory", "20")), want: vec(0, 0, 0)},
		{name: "fractional memory is an error", // Test_GenerateResourceRequests "decimal-form memory ... rejected": HAMi drops the request, we error
			pod: pod(res("cambricon.com/vmlu", "1"), res("cambricon.com/mlu.smlu.vmemory", "1.5")),
			err: `container "c": cambricon.com/mlu.smlu.vmemory "1500m": must be a whole number`},
	})
}

func TestFamilyHygon(t *testing.T) {
	runFamily(t, "hygon", []famCase{
		{name: "default_use", // HAMi examples/hygon/default_use.yaml: 2000 MiB, 60 % of the cores
			pod:  pod(res("hygon.com/dcunum", "1"), res("hygon.com/dcucores", "60"), res("hygon.com/dcumem", "2000")),
			want: vec(1, 2000, 60)},
		{name: "use_exclusive_card", // HAMi examples/hygon/use_exclusive_card.yaml: GenerateResourceRequests books 100 % memory and 100 cores
			pod: pod(res("hygon.com/dcunum", "2")), dev: card, want: vec(2, 2*card, 200)},
		{name: "requests are read without limits", // HAMi pkg/device/hygon Test_GenerateResourceRequests: limits, else requests
			pod:  pod(res("hygon.com/dcunum", "1"), testpod.Request(res("hygon.com/dcucores", "1"), res("hygon.com/dcumem", "1024"))),
			want: vec(1, 1024, 1)},
		{name: "count 0 books nothing", // GenerateResourceRequests returns an empty request for n <= 0
			pod: pod(res("hygon.com/dcunum", "0"), res("hygon.com/dcumem", "1024")), want: vec(0, 0, 0)},
		{name: "negative cores are an error", // Test_GenerateResourceRequests "negative dcu cores": HAMi drops the request, we error
			pod: pod(res("hygon.com/dcunum", "1"), res("hygon.com/dcucores", "-1")),
			err: `container "c": hygon.com/dcucores "-1": must not be negative`},
	})
}

func TestFamilyMetaxSGPU(t *testing.T) {
	const sgpu, vcore, vmem = "metax-tech.com/sgpu", "metax-tech.com/vcore", "metax-tech.com/vmemory"
	runFamily(t, "metax-sgpu", []famCase{
		{name: "default_use", // HAMi examples/metax/sgpu/default_use.yaml: a plain vmemory is GiB (pkg/device/metax/sdevice.go MemoryFactor 1024)
			pod: pod(res(sgpu, "1"), res(vcore, "60"), res(vmem, "4")), want: vec(1, 4096, 60)},
		{name: "allocate_vmemory_MiB", // HAMi examples/metax/sgpu/allocate_vmemory_MiB.yaml: a quantity with a unit is bytes
			pod: pod(res(sgpu, "1"), res(vcore, "60"), res(vmem, "2048Mi")), want: vec(1, 2048, 60)},
		{name: "16Gi", // HAMi TestGenerateResourceRequests "mem unit Gi": 16 * 1024 MiB
			pod: pod(res(sgpu, "1"), res(vcore, "60"), res(vmem, "16Gi")), want: vec(1, 16384, 60)},
		{name: "allocate_exclusive", // HAMi examples/metax/sgpu/allocate_exclusive.yaml: MemPercentagereq 100, Coresreq 100
			pod: pod(res(sgpu, "1")), dev: card, want: vec(1, card, 100)},
		{name: "cores only", // TestGenerateResourceRequests "one sgpu test set vcore": whole memory, 30 cores
			pod: pod(res(sgpu, "1"), res(vcore, "30")), dev: card, want: vec(1, card, 30)},
		{name: "multi-containers", // HAMi examples/metax/sgpu/multi-containers.yaml: 4 GiB/60 and 8 GiB/30
			pod: testpod.New("p").App("a", res(sgpu, "1"), res(vcore, "60"), res(vmem, "4")).
				App("b", res(sgpu, "1"), res(vcore, "30"), res(vmem, "8")),
			want: vec(2, 12288, 90)},
		{name: "under 1 MiB with a unit is an error", // GenerateResourceRequests floors 512Ki to 0 MiB, a whole card; we error
			pod: pod(res(sgpu, "1"), res(vmem, "512Ki")),
			err: `container "c": metax-tech.com/vmemory "512Ki": is 524288 bytes (a quantity with a unit is bytes), less than 1 MiB`},
		{name: "2000 is written 2k: bytes", // GenerateResourceRequests looks for a unit in the canonical string: "2k" is 2000 bytes, 0 MiB
			pod: pod(res(sgpu, "1"), res(vmem, "2000")), err: `metax-tech.com/vmemory "2k": is 2000 bytes`},
	})
}

func TestFamilyIluvatar(t *testing.T) {
	runFamily(t, "iluvatar-BI-V100", []famCase{
		{name: "default_use_BI-V100", // HAMi examples/iluvatar/default_use_BI-V100.yaml: 64 units of 256 MiB, 50 cores
			pod:  pod(res("iluvatar.ai/BI-V100-vgpu", "1"), res("iluvatar.ai/BI-V100.vCore", "50"), res("iluvatar.ai/BI-V100.vMem", "64")),
			want: vec(1, 16384, 50)},
		{name: "multi-devices_BI-V100", // HAMi examples/iluvatar/multi-devices_BI-V100.yaml; MutateAdmission sets vCore count*100, Fit caps at 100 per card
			pod: pod(res("iluvatar.ai/BI-V100-vgpu", "2")), dev: card, want: vec(2, 2*card, 200)},
		{name: "no memory: whole card, no cores", // HAMi pkg/device/iluvatar Test_GenerateResourceRequests "resourcemem don't set"
			pod: pod(res("iluvatar.ai/BI-V100-vgpu", "1")), dev: card, want: vec(1, card, 0)},
		{name: "multi-containers_BI-V100", // HAMi examples/iluvatar/multi-containers_BI-V100.yaml
			pod: testpod.New("p").App("a", res("iluvatar.ai/BI-V100-vgpu", "1"), res("iluvatar.ai/BI-V100.vCore", "50"), res("iluvatar.ai/BI-V100.vMem", "64")).
				App("b", res("iluvatar.ai/BI-V100-vgpu", "1"), res("iluvatar.ai/BI-V100.vCore", "50"), res("iluvatar.ai/BI-V100.vMem", "64")),
			want: vec(2, 32768, 100)},
	})
	runFamily(t, "iluvatar-MR-V100", []famCase{
		{name: "all resources", // HAMi Test_GenerateResourceRequests "all resources set": vMem 1000 books 256000 MiB
			pod:  pod(res("iluvatar.ai/MR-V100-vgpu", "1"), res("iluvatar.ai/MR-V100.vMem", "1000"), res("iluvatar.ai/MR-V100.vCore", "100")),
			want: vec(1, 256000, 100)},
		{name: "two cards: 200 cores, the scheduler's booking", // MutateAdmission sets vCore to count*100 = 200 and fitResourceQuota multiplies by Nums again (checks 400); Fit clamps Coresreq to 100 per card and books 200 (docs/devices.md)
			pod: pod(res("iluvatar.ai/MR-V100-vgpu", "2")), dev: card, want: vec(2, 2*card, 200)},
		{name: "three cards, cores written: 100 each", // MutateAdmission overwrites a written vCore 50 with 300; Fit clamps it to 100 per card
			pod: pod(res("iluvatar.ai/MR-V100-vgpu", "3"), res("iluvatar.ai/MR-V100.vCore", "50"), res("iluvatar.ai/MR-V100.vMem", "64")), want: vec(3, 3*16384, 300)},
		{name: "one card keeps its written cores", // MutateAdmission rewrites vCore only for a count above 1
			pod: pod(res("iluvatar.ai/MR-V100-vgpu", "1"), res("iluvatar.ai/MR-V100.vCore", "50"), res("iluvatar.ai/MR-V100.vMem", "64")), want: vec(1, 16384, 50)},
		{name: "a huge count is an error, never wrapped", // count x cores overflows int64: refused rather than wrapped
			pod: pod(res("iluvatar.ai/MR-V100-vgpu", "92233720368547758"), res("iluvatar.ai/MR-V100.vMem", "64")), err: "does not fit in a 64-bit integer"},
		{name: "a negative count is an error", // the API server accepts a negative extended resource limit only for it to be refused here
			pod: pod(res("iluvatar.ai/MR-V100-vgpu", "-2")), err: "must not be negative"},
		{name: "another chip's resources are not this family's", // InitIluvatarDevice: one device per chip, its own resource names
			pod: pod(res("iluvatar.ai/BI-V100-vgpu", "1")), want: vec(0, 0, 0)},
	})
}

func TestFamilyAMD(t *testing.T) {
	runFamily(t, "amd", []famCase{
		{name: "count, memory, cores", // HAMi pkg/device/amd Test_GenerateResourceRequests "parses limits only": 4096 MiB, 33 %
			pod: pod(res("amd.com/gpu", "2"), res("amd.com/gpumem", "4096"), res("amd.com/gpucores", "33")), want: vec(2, 8192, 66)},
		{name: "no cores: 100", // Test_GenerateResourceRequests "defaults an omitted core limit to 100 percent"
			pod: pod(res("amd.com/gpu", "1"), res("amd.com/gpumem", "4096")), want: vec(1, 4096, 100)},
		{name: "no memory: the whole card", // Fit: a Memreq of 0 books the card's Totalmem
			pod: pod(res("amd.com/gpu", "1")), dev: card, want: vec(1, card, 100)},
		{name: "no count books nothing", // Test_GenerateResourceRequests "no gpu limits -> empty"
			pod: pod(res("amd.com/gpumem", "4096"), res("amd.com/gpucores", "33")), want: vec(0, 0, 0)},
		{name: "cores 0 are an error", // MutateAdmission: the core percentage must be between 1 and 100
			pod: pod(res("amd.com/gpu", "1"), res("amd.com/gpucores", "0")), err: `amd.com/gpucores "0": must be within 1..100`},
	})
}

func TestFamilyGpushare(t *testing.T) {
	runFamily(t, "gpushare", []famCase{
		{name: "gpu-mem in GiB on one device", // gpushare-scheduler-extender pkg/utils/pod.go: the container's aliyun.com/gpu-mem limit
			pod: pod(res("aliyun.com/gpu-mem", "3")), want: vec(1, 3072, 0)},
		{name: "two containers, one device each", // GetGPUMemoryFromPodResource sums the containers' gpu-mem
			pod:  testpod.New("p").App("a", res("aliyun.com/gpu-mem", "3")).App("b", res("aliyun.com/gpu-mem", "5")),
			want: vec(2, 8192, 0)},
		{name: "gpu-mem 0 is no sharing request", // IsGPUsharingPod: a gpu-mem of 0 is not a GPU sharing pod
			pod: pod(res("aliyun.com/gpu-mem", "0")), want: vec(0, 0, 0)},
		{name: "gpu-count splits the memory evenly", // (assumed, after ACK's multi-GPU sharing: N GiB over M cards, N/M each)
			pod: pod(res("aliyun.com/gpu-mem", "8"), res("aliyun.com/gpu-count", "2")), want: vec(2, 8192, 0)},
		{name: "an uneven split is an error",
			pod: pod(res("aliyun.com/gpu-mem", "3"), res("aliyun.com/gpu-count", "2")),
			err: `aliyun.com/gpu-mem "3": does not split evenly over 2 devices`},
	})
}
