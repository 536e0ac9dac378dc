package nvmldiscovery_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpuadmit/gpuadmit/pkg/nvmldiscovery"
)

// TestOpenInitFailure: a failed nvmlInit yields an *InitError that names NVML
// and what to check, and nothing but Init is called (the mock panics on any
// method whose func is nil, and counts the Init calls).
func TestOpenInitFailure(t *testing.T) {
	tests := []struct {
		ret  nvml.Return
		want []string
	}{
		{nvml.ERROR_LIBRARY_NOT_FOUND, []string{"NVML", "ERROR_LIBRARY_NOT_FOUND", "libnvidia-ml.so.1", "library path", "driver installed", "NVIDIA container runtime"}},
		{nvml.ERROR_DRIVER_NOT_LOADED, []string{"NVML", "ERROR_DRIVER_NOT_LOADED", "kernel driver", "NVIDIA container runtime"}},
		{nvml.ERROR_NO_PERMISSION, []string{"NVML", "ERROR_NO_PERMISSION", "/dev/nvidia*"}},
		{nvml.ERROR_LIB_RM_VERSION_MISMATCH, []string{"NVML", "ERROR_LIB_RM_VERSION_MISMATCH", "does not match"}},
		{nvml.Return(9999), []string{"NVML", "return code 9999", "driver installed"}},
	}
	for _, tt := range tests {
		t.Run(strings.Fields(tt.want[1])[0], func(t *testing.T) {
			lib := &mock.Interface{InitFunc: func() nvml.Return { return tt.ret }}
			d, err := nvmldiscovery.Open(lib)
			if d != nil || err == nil {
				t.Fatalf("Open = %v, %v; want nil, error", d, err)
			}
			var ie *nvmldiscovery.InitError
			if !errors.As(err, &ie) || ie.Return != tt.ret {
				t.Fatalf("error %v: want *InitError with %d", err, tt.ret)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q does not mention %q", err, w)
				}
			}
			if n := len(lib.InitCalls()); n != 1 {
				t.Errorf("Init called %d times, want 1", n)
			}
		})
	}
}

// TestOpenWait: Init is retried with backoff until it succeeds; only Init is
// called meanwhile; a cancelled wait reports both the cancellation and the
// last NVML error.
func TestOpenWait(t *testing.T) {
	tests := []struct {
		name      string
		failures  int
		timeout   time.Duration
		wantErr   error
		wantInits int
	}{
		{name: "succeeds at once", failures: 0, timeout: time.Second, wantInits: 1},
		{name: "succeeds on the third try", failures: 2, timeout: time.Second, wantInits: 3},
		{name: "gives up when the context ends", failures: 1 << 30, timeout: 30 * time.Millisecond, wantErr: context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newMock(t, "dgxh200")
			inits := 0
			s.InitFunc = func() nvml.Return {
				inits++
				if inits <= tt.failures {
					return nvml.ERROR_DRIVER_NOT_LOADED
				}
				return nvml.SUCCESS
			}
			ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
			defer cancel()
			d, err := nvmldiscovery.OpenWait(ctx, s, nvmldiscovery.Backoff{Initial: time.Millisecond, Max: 4 * time.Millisecond})
			if tt.wantErr != nil {
				var ie *nvmldiscovery.InitError
				if !errors.Is(err, tt.wantErr) || !errors.As(err, &ie) {
					t.Fatalf("err = %v, want %v wrapping an *InitError", err, tt.wantErr)
				}
				if n := len(s.LookupSymbolCalls()) + len(s.DeviceGetCountCalls()); n != 0 {
					t.Errorf("%d NVML calls besides Init after failed Inits", n)
				}
				return
			}
			if err != nil || d == nil {
				t.Fatalf("OpenWait = %v, %v", d, err)
			}
			if inits != tt.wantInits {
				t.Errorf("Init called %d times, want %d", inits, tt.wantInits)
			}
		})
	}
}

// TestDevicesFaults: per-device failures mark a GPU unhealthy or leave it
// out; only a failed device count fails discovery.
func TestDevicesFaults(t *testing.T) {
	lost := func(s *server.Server) *server.Device { return s.Devices[3].(*server.Device) }
	tests := []struct {
		name        string
		inject      func(s *server.Server)
		wantErr     bool
		wantCount   int
		wantHealthy bool // of the GPU at index 3, when listed
		wantSM      int64
	}{
		{name: "healthy", inject: func(*server.Server) {}, wantCount: 8, wantHealthy: true, wantSM: 132},
		{name: "row remapping failed", inject: func(s *server.Server) {
			lost(s).GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 3, false, true, nvml.SUCCESS }
		}, wantCount: 8, wantHealthy: false, wantSM: 132},
		{name: "row remapping not supported", inject: func(s *server.Server) {
			lost(s).GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.ERROR_NOT_SUPPORTED }
		}, wantCount: 8, wantHealthy: true, wantSM: 132},
		{name: "memory query says GPU lost", inject: func(s *server.Server) {
			lost(s).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_GPU_IS_LOST }
		}, wantCount: 8, wantHealthy: false, wantSM: 132},
		{name: "UUID unreadable: left out", inject: func(s *server.Server) {
			lost(s).GetUUIDFunc = func() (string, nvml.Return) { return "", nvml.ERROR_GPU_IS_LOST }
		}, wantCount: 7},
		{name: "no handle: left out", inject: func(s *server.Server) {
			next := s.DeviceGetHandleByIndexFunc
			s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
				if i == 3 {
					return nil, nvml.ERROR_GPU_IS_LOST
				}
				return next(i)
			}
		}, wantCount: 7},
		{name: "device attributes give the SM count", inject: func(s *server.Server) {
			lost(s).GetAttributesFunc = func() (nvml.DeviceAttributes, nvml.Return) {
				return nvml.DeviceAttributes{MultiprocessorCount: 130}, nvml.SUCCESS
			}
		}, wantCount: 8, wantHealthy: true, wantSM: 130},
		{name: "old driver without nvmlDeviceGetNumGpuCores: SM count unknown", inject: func(s *server.Server) {
			s.LookupSymbolFunc = func(sym string) error {
				if sym == "nvmlDeviceGetNumGpuCores" {
					return errors.New("undefined symbol")
				}
				return nil
			}
			lost(s).GetNumGpuCoresFunc = nil // calling it would panic
		}, wantCount: 8, wantHealthy: true, wantSM: 0},
		{name: "device count fails", inject: func(s *server.Server) {
			s.DeviceGetCountFunc = func() (int, nvml.Return) { return 0, nvml.ERROR_UNKNOWN }
		}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newMock(t, "dgxh200")
			tt.inject(s)
			d, err := nvmldiscovery.Open(s)
			if err != nil {
				t.Fatal(err)
			}
			got, err := d.Devices(context.Background())
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "DeviceGetCount") {
					t.Fatalf("err = %v, want a DeviceGetCount error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.wantCount {
				t.Fatalf("got %d devices, want %d", len(got), tt.wantCount)
			}
			for _, dev := range got {
				want := dev.Index != 3 || tt.wantHealthy
				if dev.Healthy != want {
					t.Errorf("GPU %d healthy = %v, want %v", dev.Index, dev.Healthy, want)
				}
				if dev.Index == 3 && dev.SMCount != tt.wantSM {
					t.Errorf("GPU 3 SM count = %d, want %d", dev.SMCount, tt.wantSM)
				}
				if tt.wantCount == 7 && dev.Index == 3 {
					t.Errorf("GPU 3 listed, want it left out: %+v", dev)
				}
			}
		})
	}
}
