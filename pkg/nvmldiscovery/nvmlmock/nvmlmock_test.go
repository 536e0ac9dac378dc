package nvmlmock_test

import (
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuadmit/gpuadmit/pkg/nvmldiscovery/nvmlmock"
)

func TestNew(t *testing.T) {
	tests := []struct {
		system  string
		wantErr string
		migGPUs int
	}{
		{system: "dgxh200"},
		{system: "dgxa100"},
		{system: "dgxa100-mig", migGPUs: 2},
		{system: "dgxz900", wantErr: `unknown NVML mock system "dgxz900" (known: dgxa100, dgxa100-mig, dgxb200, dgxh100, dgxh200)`},
	}
	for _, tt := range tests {
		t.Run(tt.system, func(t *testing.T) {
			s, err := nvmlmock.New(tt.system)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mig := 0
			for _, d := range s.Devices {
				uuid, _ := d.GetUUID()
				if !strings.HasPrefix(uuid, "GPU-") {
					t.Errorf("UUID %q", uuid)
				}
				if cur, _, _ := d.GetMigMode(); cur == nvml.DEVICE_MIG_ENABLE {
					mig++
				}
			}
			if mig != tt.migGPUs {
				t.Errorf("%d GPUs with MIG enabled, want %d", mig, tt.migGPUs)
			}
		})
	}
}
