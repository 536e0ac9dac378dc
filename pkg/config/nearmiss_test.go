package config_test

import "testing"

// TestMisspeltKeys: a key of the devices section within two edits of a key
// gpuadmit reads in the same place is its misspelling: an error naming the
// key meant (memoryFactr: 1024 ignored would charge a 20 GiB pod 20 MiB);
// HAMi's own keys near one gpuadmit reads stay ignored.
func TestMisspeltKeys(t *testing.T) {
	tests := []parseCase{
		{name: "memoryFactr: did you mean memoryFactor", in: "nvidia:\n  memoryFactr: 1024\n",
			wantErr: `nvidia.memoryFactr: unknown key "memoryFactr": did you mean memoryFactor?`},
		{name: "a transposition: memroyFactor", in: "nvidia:\n  memroyFactor: 1024\n", wantErr: "did you mean memoryFactor?"},
		{name: "the case: memoryfactor", in: "nvidia:\n  memoryfactor: 1024\n", wantErr: "did you mean memoryFactor?"},
		{name: "two edits: defaultMemry", in: "nvidia:\n  defaultMemry: 1\n", wantErr: "did you mean defaultMemory?"},
		{name: "hygon's memoryFactor", in: "hygon:\n  memoryFactr: 4\n", wantErr: `hygon.memoryFactr: unknown key "memoryFactr": did you mean memoryFactor?`},
		{name: "a section: nvida", in: "nvida:\n  memoryFactor: 2\n", wantErr: `nvida: unknown key "nvida": did you mean nvidia?`},
		{name: "a list entry's key: chipNme", in: "iluvatars:\n  - {chipNme: MR-V50}\n", wantErr: "iluvatars[0].chipNme: unknown key \"chipNme\": did you mean chipName?"},
		{name: "a template's key: memroy", in: "vnpus:\n  configs:\n  - chipName: 910B2\n    templates: [{name: vir, memroy: 8192}]\n", wantErr: "did you mean memory?"},
		{name: "gpushare's own: memoryUnt", in: "gpushare:\n  memoryUnt: MiB\n", wantErr: `gpushare.memoryUnt: unknown key "memoryUnt": did you mean memoryUnit?`},
		{name: "HAMi's own keys near one gpuadmit reads stay ignored: iluvatar beside iluvatars", in: "iluvatar:\n  resourceCountName: iluvatar.ai/vgpu\n", ignored: []string{"iluvatar.resourceCountName"}},
		{name: "hamiConfigMpa", in: "hamiConfigMpa: kube-system/hami-scheduler-device\n", wantErr: `unknown key "hamiConfigMpa": did you mean hamiConfigMap?`},
		{name: "ascnd", in: "ascnd: {enabled: true}\n", wantErr: `unknown key "ascnd": did you mean ascend?`},
		{name: "a vnpus key near configs", in: "vnpus:\n  confgs: []\n", wantErr: `vnpus.confgs: unknown key "confgs": did you mean configs?`},
		{name: "gpuadmit's own section: admision", in: "apiVersion: config.gpuadmit.io/v1alpha1\nkind: Configuration\nadmision: {}\n",
			wantErr: `unknown key "admision": did you mean admission?`},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}
