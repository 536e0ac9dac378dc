package decision_test

import (
	"context"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"

	"github.com/gpuadmit/gpuadmit/internal/fixtures/testnode"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testns"
	"github.com/gpuadmit/gpuadmit/internal/fixtures/testpod"
	"github.com/gpuadmit/gpuadmit/pkg/decision"
	"github.com/gpuadmit/gpuadmit/pkg/devices"
)

// TestWholeCardDenialNamesWhereSizesComeFrom: a whole-card pod no node
// it may run on sizes is denied (never charged 0 MiB), and the denial
// sends its user to what announces the cluster's GPU sizes: HAMi's
// registration on a cluster HAMi registers (where gpuadmit's node agent
// need not run: naming its annotation there sent users to the wrong
// place), the agent's annotation where the agent announces them, both
// where no node announces any.
func TestWholeCardDenialNamesWhereSizesComeFrom(t *testing.T) {
	hamiValue, err := devices.EncodeHAMiNodeRegister([]devices.Device{{UUID: "GPU-h", Index: 0, Model: "NVIDIA-A10", MemoryMiB: 24576, Cores: 100, Healthy: true}})
	if err != nil {
		t.Fatal(err)
	}
	hami := testnode.Annotated("hami-1", map[string]string{"gpu": "a10"}, map[string]string{devices.HAMiNodeRegisterAnnotation: hamiValue})
	garbledHAMi := testnode.Annotated("hami-2", nil, map[string]string{devices.HAMiNodeRegisterAnnotation: "not a registration"})
	agent := testnode.WithGPUs("agent-1", map[string]string{"gpu": "a10"}, 24576)
	tests := []struct {
		name        string
		nodes       []*corev1.Node
		selector    map[string]string
		want, never []string
	}{
		{name: "HAMi cluster, the pod's nodes not registered", nodes: []*corev1.Node{hami}, selector: map[string]string{"gpu": "h100"},
			want: []string{"HAMi's device plugin", devices.HAMiNodeRegisterAnnotation}, never: []string{devices.NodeDevicesAnnotation}},
		{name: "HAMi cluster, the registration unreadable", nodes: []*corev1.Node{garbledHAMi},
			want: []string{"HAMi's device plugin", devices.HAMiNodeRegisterAnnotation}, never: []string{devices.NodeDevicesAnnotation}},
		{name: "HAMi and agent nodes: HAMi's", nodes: []*corev1.Node{hami, agent}, selector: map[string]string{"gpu": "h100"},
			want: []string{"HAMi's device plugin", devices.HAMiNodeRegisterAnnotation}, never: []string{devices.NodeDevicesAnnotation}},
		{name: "agent cluster", nodes: []*corev1.Node{agent}, selector: map[string]string{"gpu": "h100"},
			want: []string{"gpuadmit's node agent", devices.NodeDevicesAnnotation}, never: []string{"hami.io/"}},
		{name: "no node announces any", want: []string{devices.HAMiNodeRegisterAnnotation, devices.NodeDevicesAnnotation, "agent.enabled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLedger()
			testns.Known(l, "team-a")
			for _, n := range tt.nodes {
				l.UpsertNode(n)
			}
			d, err := decision.New(engine(t), l, configWith(nil), logr.Discard())
			if err != nil {
				t.Fatal(err)
			}
			pod := withSelector(testpod.New("whole").NS("team-a").App("c", testpod.GPU(1)).Build(), tt.selector)
			got, err := d.Decide(context.Background(), decision.Request{Pod: pod})
			if err != nil {
				t.Fatal(err)
			}
			var denial string
			for _, m := range got.Denials {
				if strings.Contains(m, "no GPU node it could run on announces its device memory") {
					denial = m
				}
			}
			if got.Allowed || denial == "" {
				t.Fatalf("allowed=%v, denials %q: want the whole card denied as unsized", got.Allowed, got.Denials)
			}
			for _, w := range tt.want {
				if !strings.Contains(denial, w) {
					t.Errorf("the denial does not name %q:\n%s", w, denial)
				}
			}
			for _, m := range got.Denials {
				for _, n := range tt.never {
					if strings.Contains(m, n) {
						t.Errorf("a denial names %q, which this cluster does not use:\n%s", n, m)
					}
				}
			}
		})
	}
}
