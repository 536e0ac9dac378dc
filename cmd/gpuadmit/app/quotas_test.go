package app_test

import (
	"strconv"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/clitest/apptest"
	"github.com/gpuadmit/gpuadmit/internal/clitest/fixtures"
)

// TestQuotaProblems: no ResourceQuota is silently unenforced. A memory
// limit in bytes (24Gi) is MiB rounded down, never the number of bytes as
// MiB (no limit at all): a 30000 MiB pod is denied, and the reading is a
// warning naming HAMi's. A limit on a family gpuadmit does not govern
// (hygon's dcumem without a hygon section) is a warning of usage and eval
// and a line of audit (exit 1); with the section configured it is
// enforced. A value that is not whole is shown as written ("1.5", not
// "1500m") and enforced rounded down (1, not 0 and not 2). A
// configuration key within two edits of one gpuadmit reads is an error
// naming the key meant.
func TestQuotaProblems(t *testing.T) {
	const (
		bytesWarn = `warning: quota team-a/gpu-quota: limits.nvidia.com/gpumem "24Gi": a memory limit in bytes: enforced as 24576 MiB ` +
			`(bytes rounded down to MiB); HAMi reads it as 25769803776 MiB (the number of bytes as memory units: effectively no limit): write "24576"`
		hygonWarn = `warning: ungoverned team-a/dcu: limits.hygon.com/dcumem "8000": a resource of the hygon device family, which gpuadmit ` +
			`does not govern (no hygon section in its configuration, or its section switched off: devices.ascend.enabled, devices.iluvatar.enabled): not enforced by gpuadmit`
		fracWarn = `warning: quota team-a/gpu-quota: limits.nvidia.com/gpu "1.5": not a whole number: enforced as 1 (rounded down, never more than written)`
	)
	bytes := fixtures.WriteTemp(t, "bytes.yaml", fixtures.QuotaDoc("team-a", "gpu-quota", `limits.nvidia.com/gpumem: "24Gi"`))
	hygon := fixtures.WriteTemp(t, "hygon.yaml", fixtures.QuotaDoc("team-a", "dcu", `limits.hygon.com/dcumem: "8000"`))
	frac := fixtures.WriteTemp(t, "frac.yaml", fixtures.StateOf(fixtures.QuotaDoc("team-a", "gpu-quota", `limits.nvidia.com/gpu: "1.5"`),
		fixtures.PodDoc("team-a", "one", "", 1, 1024, 0)))
	hygonCfg := fixtures.WriteTemp(t, "hygon-config.yaml", "nvidia: {}\nhygon: {}\n")
	typo := fixtures.WriteTemp(t, "typo.yaml", "nvidia:\n  memoryFactr: 1024\n")
	hygonPod := func(mem int) string {
		return "apiVersion: v1\nkind: Pod\nmetadata: {name: dcu, namespace: team-a}\n" +
			"spec: {containers: [{name: c, resources: {limits: {hygon.com/dcunum: 1, hygon.com/dcumem: " + strconv.Itoa(mem) + "}}}]}\n"
	}
	tests := []apptest.Case{
		{Name: "24Gi: usage reads 24576 MiB and warns", Args: []string{"usage", "--state", bytes, "-o", "jsonpath={.namespaces.team-a.limits.gpumem}"},
			WantText: "24576", WantErrSub: "gpuadmit usage: " + bytesWarn},
		{Name: "24Gi: a 30000 MiB pod is denied (attack: read as 25769803776 MiB it was admitted)",
			Args: []string{"eval", "-f", "-", "--state", bytes}, Stdin: gpuPod("big", 30000), WantCode: 1,
			WantTextSub: []string{"Pod team-a/big denied", "pod needs 30000 MiB", "limit 24576 MiB"}, WantErrSub: "gpuadmit eval: " + bytesWarn},
		{Name: "24Gi: a 20000 MiB pod is admitted", Args: []string{"eval", "-f", "-", "--state", bytes}, Stdin: gpuPod("small", 20000),
			WantTextSub: []string{"small  "}, NotInText: []string{"denied"}, WantErrSub: "gpuadmit eval: " + bytesWarn},
		{Name: "hygon without its section: usage warns", Args: []string{"usage", "--state", hygon}, WantTextSub: []string{"NAMESPACE"},
			WantErrSub: "gpuadmit usage: " + hygonWarn},
		{Name: "hygon without its section: eval warns", Args: []string{"eval", "-f", "-", "--state", hygon}, Stdin: hygonPod(9000),
			WantTextSub: []string{"dcu"}, WantErrSub: "gpuadmit eval: " + hygonWarn},
		{Name: "hygon without its section: audit lists it, exit 1", Args: []string{"audit", "--state", hygon}, WantCode: 1,
			WantTextSub: []string{"ResourceQuota keys not enforced as written:\n  ungoverned team-a/dcu: limits.hygon.com/dcumem \"8000\""},
			WantErrSub:  "gpuadmit audit: " + hygonWarn},
		{Name: "hygon without its section: audit -o json", Args: []string{"audit", "--state", hygon, "-o", "jsonpath={.notEnforced[*].key}"},
			WantCode: 1, WantText: "limits.hygon.com/dcumem", WantErrSub: hygonWarn},
		{Name: "hygon with its section: enforced, a 9000 dcumem pod denied", Args: []string{"eval", "-f", "-", "--state", hygon, "--config", hygonCfg},
			Stdin: hygonPod(9000), WantCode: 1, WantTextSub: []string{"Pod team-a/dcu denied", "hygon.com/dcumem"}, WantErrSub: "not in the state"},
		{Name: "1.5: shown as written, enforced as 1", Args: []string{"usage", "--state", frac}, WantTextSub: []string{"team-a      1      1/1 "},
			NotInText: []string{"1500m", "0/0"}, WantErrSub: "gpuadmit usage: " + fracWarn},
		{Name: "1.5: a second GPU is denied", Args: []string{"eval", "-f", "-", "--state", frac}, Stdin: gpuPod("two", 1024), WantCode: 1,
			WantTextSub: []string{"Pod team-a/two denied", "limit 1"}, WantErrSub: fracWarn},
		{Name: "memoryFactr: did you mean memoryFactor, exit 2", Args: []string{"usage", "--state", bytes, "--config", typo}, WantCode: 2,
			WantErrSub: `gpuadmit usage: config ` + typo + `: nvidia.memoryFactr: unknown key "memoryFactr": did you mean memoryFactor?`},
		{Name: "memoryFactr: eval refuses too", Args: []string{"eval", "-f", "-", "--state", bytes, "--config", typo}, Stdin: gpuPod("p", 1), WantCode: 2,
			WantErrSub: `did you mean memoryFactor?`},
	}
	for _, tt := range tests {
		t.Run(tt.Name, tt.Check)
	}
}
