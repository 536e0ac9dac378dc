package effective_test

import (
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
)

// The backends of the other rules: whole devices, templates, slices,
// profiles, core splits. Each case names the HAMi behaviour it matches.

func TestFamilyWholeDevices(t *testing.T) {
	runFamily(t, "metax", []famCase{
		{name: "default_use", // HAMi examples/metax/gpu/default_use.yaml; pkg/device/metax/device.go GetNodeDevices registers 65536 MiB, 100 cores
			pod: pod(res("metax-tech.com/gpu", "1")), want: vec(1, 65536, 100)},
		{name: "two GPUs", // GenerateResourceRequests: MemPercentagereq 100, Coresreq 100 per device
			pod: pod(res("metax-tech.com/gpu", "2")), want: vec(2, 131072, 200)},
	})
	runFamily(t, "enflame-gcu", []famCase{
		{name: "gcu_use", // HAMi examples/enflame/gcu_use.yaml; pkg/device/enflame/gcu.go books Memreq 100 of a nominal 100, cores 100
			pod: pod(res("enflame.com/gcu", "2")), want: vec(2, 200, 200)},
	})
	runFamily(t, "kunlun", []famCase{
		{name: "whole XPUs", // HAMi pkg/device/kunlun/device.go Fit books Usedmem Totalmem (98304) and Usedcores Totalcore (100)
			pod: pod(res("kunlunxin.com/xpu", "2")), want: vec(2, 2*98304, 200)},
	})
	runFamily(t, "vastai", []famCase{
		{name: "default_use", // HAMi examples/vastai/default_use.yaml; pkg/device/vastai/device.go Fit books no memory and Coresreq 0
			pod: pod(res("vastaitech.com/va", "1")), want: vec(1, 0, 0)},
	})
	runFamily(t, "biren", []famCase{
		{name: "default_use", // HAMi examples/biren/default_use.yaml; pkg/device/biren/device.go Fit books no memory and Coresreq 0
			pod: pod(res("birentech.com/gpu", "1")), want: vec(1, 0, 0)},
		{name: "count 0", // GenerateResourceRequests: Nums 0 books nothing
			pod: pod(res("birentech.com/gpu", "0")), want: vec(0, 0, 0)},
	})
}

func TestFamilyAscend(t *testing.T) {
	const npu, mem, core = "huawei.com/Ascend910B2", "huawei.com/Ascend910B2-memory", "huawei.com/Ascend910B2-core"
	runFamily(t, "ascend-910B2", []famCase{
		{name: "job-910B2", // HAMi examples/ascend/job-910B2.yaml; pkg/device/ascend/device.go trimMemory: 2000 rounds up to vir03_1c_8g, 8192
			pod: pod(res(npu, "1"), res(mem, "2000")), want: vec(1, 8192, 0)},
		{name: "between templates", // trimMemory: 16385 rounds up to vir12_3c_32g, 32768
			pod: pod(res(npu, "1"), res(mem, "16385")), want: vec(1, 32768, 0)},
		{name: "above every template: the whole NPU", // trimMemory: above the templates, up to memoryCapacity, books memoryAllocatable
			pod: pod(res(npu, "1"), res(mem, "40000")), want: vec(1, 65536, 0)},
		{name: "no memory: memoryAllocatable", // MutateAdmission writes memoryAllocatable when no memory is set
			pod: pod(res(npu, "2")), want: vec(2, 2*65536, 0)},
		{name: "memory 0: the smallest template", // trimMemory(0) returns the first template
			pod: pod(res(npu, "1"), res(mem, "0")), want: vec(1, 8192, 0)},
		{name: "above the capacity is an error", // MutateAdmission: "memory ... is invalid" when trimMemory finds nothing
			pod: pod(res(npu, "1"), res(mem, "70000")), err: `huawei.com/Ascend910B2-memory "70k": exceeds the device's 65536 MiB`},
		{name: "a template for two NPUs is an error", // MutateAdmission: "vNPU not supported for multiple devices"
			pod: pod(res(npu, "2"), res(mem, "8192")), err: "rounds to the 8192 MiB template, which is only for a single device"},
		{name: "cores in hard split are an error", // Test_MutateAdmission_HardSplitCoreRejected "hard split with core is rejected"
			pod: pod(res(npu, "1"), res(mem, "8192"), res(core, "10")), err: "is only accepted with the pod annotation huawei.com/vnpu-mode: hami-core"},
		{name: "cores 0 in hard split", // Test_MutateAdmission_HardSplitCoreRejected "hard split with core=0 is allowed"
			pod: pod(res(npu, "1"), res(mem, "8192"), res(core, "0")), want: vec(1, 8192, 0)},
		{name: "hami-core: memory and cores as requested", // Test_GenerateResourceRequests_VNPUCoreMode: memory 15360, cores 10, no rounding
			pod:  testpod.New("p").Annotate("huawei.com/vnpu-mode", "hami-core").App("c", res(npu, "2"), res(mem, "15360"), res(core, "10")),
			want: vec(2, 2*15360, 20)},
		{name: "count 0 books nothing", // GenerateResourceRequests: n <= 0 is an empty request
			pod: pod(res(npu, "0"), res(mem, "2000")), want: vec(0, 0, 0)},
	})
	runFamily(t, "ascend-910A", []famCase{
		{name: "job-910A", // HAMi examples/ascend/job-910A.yaml: 2000 rounds up to vir02, 2184
			pod: pod(res("huawei.com/Ascend910A", "1"), res("huawei.com/Ascend910A-memory", "2000")), want: vec(1, 2184, 0)},
		{name: "two NPUs with the whole memory", // HAMi Test_MutateAdmission: 2 NPUs need memoryAllocatable each
			pod: pod(res("huawei.com/Ascend910A", "2"), res("huawei.com/Ascend910A-memory", "32768")), want: vec(2, 65536, 0)},
	})
	runFamily(t, "ascend-310P3", []famCase{
		{name: "job-310P", // HAMi examples/ascend/job-310P.yaml: 2000 rounds up to vir01, 3072
			pod: pod(res("huawei.com/Ascend310P", "1"), res("huawei.com/Ascend310P-memory", "2000")), want: vec(1, 3072, 0)},
		{name: "above the templates within the capacity", // trimMemory: 20000 <= memoryCapacity 24576 books memoryAllocatable 21527
			pod: pod(res("huawei.com/Ascend310P", "1"), res("huawei.com/Ascend310P-memory", "20000")), want: vec(1, 21527, 0)},
	})
	runFamily(t, "ascend-910B3", []famCase{
		{name: "job-910B3", // HAMi examples/ascend/job-910B3.yaml: 2000 rounds up to vir05_1c_16g, 16384
			pod: pod(res("huawei.com/Ascend910B3", "1"), res("huawei.com/Ascend910B3-memory", "2000")), want: vec(1, 16384, 0)},
	})
	runFamily(t, "ascend-910B4", []famCase{
		{name: "job-910B4", // HAMi examples/ascend/job-910B4.yaml: 2000 rounds up to vir05_1c_8g, 8192
			pod: pod(res("huawei.com/Ascend910B4", "1"), res("huawei.com/Ascend910B4-memory", "2000")), want: vec(1, 8192, 0)},
	})
	runFamily(t, "ascend-910C", []famCase{
		{name: "job-910C: one NPU books a pair", // HAMi examples/ascend/job-910C.yaml; Test_MutateAdmission910C "request 1 → auto adjust to 2"
			pod: pod(res("huawei.com/Ascend910C", "1"), res("huawei.com/Ascend910C-memory", "16384")), want: vec(2, 2*16384, 0)},
		{name: "four NPUs", // Test_MutateAdmission910C "request 4 → valid even number"
			pod: pod(res("huawei.com/Ascend910C", "4")), want: vec(4, 4*65536, 0)},
		{name: "three NPUs are an error", // Test_MutateAdmission910C "request 3 → reject (odd number)"
			pod: pod(res("huawei.com/Ascend910C", "3")), err: `huawei.com/Ascend910C "3": must be 1 or an even number`},
	})
}

func TestFamilyKunlunVXPU(t *testing.T) {
	const vxpu, vmem = "kunlunxin.com/vxpu", "kunlunxin.com/vxpu-memory"
	runFamily(t, "kunlun-vxpu", []famCase{
		{name: "default_use", // HAMi examples/kunlun/default_use.yaml; pkg/device/kunlun/vdevice.go: cores are memory*100/98304
			pod: pod(res(vxpu, "1"), res(vmem, "24576")), want: vec(1, 24576, 25)},
		{name: "allocate_exclusive", // HAMi examples/kunlun/allocate_exclusive.yaml; Test_KunlunVDevices_GenerateResourceRequests "defaults to full device"
			pod: pod(res(vxpu, "1")), want: vec(1, 98304, 100)},
		{name: "just above the first template", // Test_trimMemory "just above first threshold": 24577 books 49152
			pod: pod(res(vxpu, "2"), res(vmem, "24577")), want: vec(2, 2*49152, 100)},
		{name: "memory 0: the first template", // Test_trimMemory "zero": 24576
			pod: pod(res(vxpu, "1"), res(vmem, "0")), want: vec(1, 24576, 25)},
		{name: "above the device is an error", // Test_trimMemory "far above": HAMi books 98304 for 200000, we error
			pod: pod(res(vxpu, "1"), res(vmem, "200000")), err: `kunlunxin.com/vxpu-memory "200k": exceeds the device's 98304 MiB`},
	})
}

func TestFamilyMthreads(t *testing.T) {
	const vgpu, smem, score = "mthreads.com/vgpu", "mthreads.com/sgpu-memory", "mthreads.com/sgpu-core"
	runFamily(t, "mthreads", []famCase{
		{name: "default_use", // HAMi examples/mthreads/default_use.yaml; pkg/device/mthreads/device.go: 32 units of 512 MiB, 8 of 16 cores
			pod: pod(res(vgpu, "1"), res(smem, "32"), res(score, "8")), want: vec(1, 16384, 8)},
		{name: "multi_cards", // HAMi examples/mthreads/multi_cards.yaml; MutateAdmission sets count*16 cores and count*96 units
			pod: pod(res(vgpu, "2")), want: vec(2, 2*49152, 32)},
		{name: "use_exclusive", // HAMi examples/mthreads/use_exclusive.yaml; MutateAdmission: no memory, the whole card
			pod: pod(res(vgpu, "1")), want: vec(1, 49152, 16)},
		{name: "memory on two cards is overwritten", // MutateAdmission overwrites memory and cores for more than one card
			pod: pod(res(vgpu, "2"), res(smem, "8"), res(score, "2")), want: vec(2, 2*49152, 32)},
		{name: "an illegal slice is an error", // MutateAdmission: "sGPU memory request value is invalid"
			pod: pod(res(vgpu, "1"), res(smem, "3")), err: "must be one of 2, 4, 8, 16, 32, 64, 96 (units of 512 MiB)"},
		{name: "count 0 is an error", // MutateAdmission: "must be greater than 0"
			pod: pod(res(vgpu, "0")), err: `mthreads.com/vgpu "0": must be greater than 0`},
		{name: "more cores than a card has are an error", // Fit: a card has 16 cores, 17 never fits
			pod: pod(res(vgpu, "1"), res(smem, "8"), res(score, "17")), err: `mthreads.com/sgpu-core "17": must be within 0..16`},
	})
}

// TestFamilyEnflameDRS: charged as HAMi's webhook checks the quota (its
// pkg/scheduler/webhook.go fitResourceQuota sums Memreq x Nums and
// Coresreq x Nums of pkg/device/enflame/device.go GenerateResourceRequests
// over the app containers): the request as written, never unresolved.
// HAMi's scheduler (Fit) books the profile it picks instead; docs/devices.md
// lists the difference.
func TestFamilyEnflameDRS(t *testing.T) {
	const drs, gmem, gcore = "enflame.com/drs-gcu", "enflame.com/gcu-memory", "enflame.com/gcu-core"
	runFamily(t, "enflame", []famCase{
		{name: "drs-gcu 4: gcu-memory 4, no cores", // GenerateResourceRequests: drs-gcu n>0 gives Nums 1, Memreq n, Coresreq 0 (enflameRequestModeDirect)
			pod: pod(res(drs, "4")), want: vec(1, 4, 0)},
		{name: "vgcu_use: a node known changes nothing", // HAMi examples/enflame/vgcu_use.yaml; the webhook checks the size, whatever the node's profiles
			pod: pod(res(drs, "3")), dev: 40960, want: vec(1, 3, 0)},
		{name: "an assigned profile changes nothing", // fitResourceQuota runs at admission, before Fit picks the 3g.20gb profile
			pod: pod(res(drs, "3")), assigned: map[string][]int64{"c": {20480}}, want: vec(1, 3, 0)},
		{name: "gcu-memory 16, gcu-core 25: 16 and 25", // GenerateResourceRequests by spec: Memreq 16, Coresreq 25 (enflameRequestModeBySpec)
			pod: pod(res(gmem, "16"), res(gcore, "25")), want: vec(1, 16, 25)},
		{name: "drs-pod-by-spec", // HAMi examples/enflame/vgcu_use.yaml drs-pod-by-spec; TestGenerateResourceRequests_ByMemoryCore: Nums 1
			pod: pod(res(gmem, "20480"), res(gcore, "40")), want: vec(1, 20480, 40)},
		{name: "gcu-core alone", // MutateAdmission accepts a core request without memory; Memreq 0
			pod: pod(res(gcore, "25")), want: vec(1, 0, 25)},
		{name: "gcu-memory alone", // Memreq as written, Coresreq 0
			pod: pod(res(gmem, "8")), want: vec(1, 8, 0)},
		{name: "drs-gcu wins over memory and cores", // GenerateResourceRequests returns on a positive drs-gcu before reading gcu-memory
			pod: pod(res(drs, "2"), res(gmem, "16"), res(gcore, "50")), want: vec(1, 2, 0)},
		{name: "two containers sum", // fitResourceQuota sums the app containers
			pod: testpod.New("p").App("a", res(gmem, "16"), res(gcore, "25")).App("b", res(drs, "4")), want: vec(2, 20, 25)},
		{name: "init containers: the larger of the apps' sum and the largest init", // fitResourceQuota: max(sum(apps), max(inits))
			pod: testpod.New("p").Init("i", res(gmem, "64")).App("a", res(gmem, "16"), res(gcore, "25")), want: vec(1, 64, 25)},
		{name: "drs-gcu 0 is an error", // MutateAdmission: "must be greater than 0"
			pod: pod(res(drs, "0")), err: `enflame.com/drs-gcu "0": must be greater than 0`},
		{name: "gcu-memory 0 is an error", // MutateAdmission: gcu-memory "must be greater than 0"
			pod: pod(res(gmem, "0"), res(gcore, "25")), err: `enflame.com/gcu-memory "0": must be greater than 0`},
		{name: "gcu-core 0 is an error", // MutateAdmission: gcu-core "must be in range (0,100]"
			pod: pod(res(gmem, "20480"), res(gcore, "0")), err: `enflame.com/gcu-core "0": must be within 1..100`},
		{name: "gcu-core 101 is an error", // MutateAdmission: gcu-core "must be in range (0,100]"
			pod: pod(res(gcore, "101")), err: `enflame.com/gcu-core "101": must be within 0..100`},
		// Attacks: where HAMi books nothing, gpuadmit refuses; nothing is read as 0.
		{name: "drs-gcu above int32 is an error, not free", // GenerateResourceRequests: n > MaxInt32 returns an empty request (nothing checked)
			pod: pod(res(drs, "2147483648")), err: "must be at most 2147483647"},
		{name: "gcu-memory above int32 is an error, not free", // GenerateResourceRequests: memReq > MaxInt32 returns an empty request
			pod: pod(res(gmem, "2147483648"), res(gcore, "25")), err: "must be at most 2147483647"},
		{name: "a negative drs-gcu is an error", // MutateAdmission: Value() <= 0
			pod: pod(res(drs, "-4")), err: "must not be negative"},
		{name: "a fractional gcu-memory is an error", // HAMi's Value() rounds 1.5 up to 2; gpuadmit refuses to guess
			pod: pod(res(gmem, "1.5")), err: "must be a whole number"},
		{name: "a byte suffix on gcu-memory is an error with the figure to write", // HAMi reads 16Gi as 17179869184 (above int32: nothing booked)
			pod: pod(res(gmem, "16Gi")), err: "is 17179869184 MiB as HAMi reads it"},
		{name: "a byte suffix on gcu-core is out of range", // 1Ki cores is 1024, outside (0,100]
			pod: pod(res(gcore, "1Ki")), err: `enflame.com/gcu-core "1Ki": must be within 0..100`},
	})
}

func TestFamilyAWSNeuron(t *testing.T) {
	const dev, core = "aws.amazon.com/neuron", "aws.amazon.com/neuroncore"
	runFamily(t, "awsneuron", []famCase{
		{name: "allocate_dev", // HAMi examples/awsneuron/allocate_dev.yaml; Test_GenerateResourceRequests "allocate neuron device": 2 cores
			pod: pod(res(dev, "1"), res("cpu", "4")), want: vec(1, 0, 2)},
		{name: "allocate_core", // HAMi examples/awsneuron/allocate_core.yaml; "allocate neuron core": 1 device, 1 core
			pod: pod(res(core, "1")), want: vec(1, 0, 1)},
		{name: "multi_containers", // HAMi examples/awsneuron/multi_containers.yaml: one core each
			pod: testpod.New("p").App("a", res(core, "1")).App("b", res(core, "1")), want: vec(2, 0, 2)},
		{name: "cores fill devices", // splitCoreRequest: 4 cores are 2 devices of 2
			pod: pod(res(core, "4")), want: vec(2, 0, 4)},
		{name: "an odd core count is an error", // Test_GenerateResourceRequests "reject odd neuron core request"
			pod: pod(res(core, "3")), err: `aws.amazon.com/neuroncore "3": must be at most 2 or a multiple of 2`},
		{name: "zero cores are an error", // Test_GenerateResourceRequests "reject zero neuron core request"
			pod: pod(res(core, "0")), err: `aws.amazon.com/neuroncore "0": must be greater than 0`},
	})
}
