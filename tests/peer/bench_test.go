package peer

import (
	"context"
	"fmt"
	"testing"

	"github.com/gpuadmit/gpuadmit/internal/load/benchtimer"
)

// benchSizes are the pod counts of the reviewed namespace.
func benchSizes() []int { return []int{100, 1000, 10_000} }

// otherPods are spread over otherNamespaces, for realism: they must not
// count.
const (
	otherPods       = 1000
	otherNamespaces = 10
	podMiB          = 1024
)

// benchPeers fills namespace "bench" with n running pods of podMiB each,
// under a limit with room for two more, and the other namespaces.
func benchPeers(b *testing.B, n int) *peers {
	b.Helper()
	ctx := context.Background()
	p, err := newPeers(ctx)
	if err != nil {
		b.Fatal(err)
	}
	mems := func(k int) []int64 {
		m := make([]int64, k)
		for i := range m {
			m[i] = podMiB
		}
		return m
	}
	for i := range otherNamespaces {
		if err := p.namespace(ctx, fmt.Sprintf("other-%d", i), otherPods*podMiB, mems(otherPods/otherNamespaces)); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.namespace(ctx, "bench", int64(n+2)*podMiB, mems(n)); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkGatekeeper is one review by the constraint framework of a pod
// that fits (allowed), with n pods in its namespace.
func BenchmarkGatekeeper(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			p := benchPeers(b, n)
			ctx := context.Background()
			req, err := admissionRequest(newPod("bench", "reviewed", podMiB))
			if err != nil {
				b.Fatal(err)
			}
			if v, err := p.gk.review(ctx, req); err != nil || v.denied {
				b.Fatalf("verdict %+v, %v", v, err)
			}
			t := benchtimer.New()
			b.ReportAllocs()
			for b.Loop() {
				t.Begin()
				if _, err := p.gk.review(ctx, req); err != nil {
					b.Fatal(err)
				}
				t.End()
			}
			t.Report(b)
		})
	}
}

// BenchmarkGpuadmit is one decision by gpuadmit on the same pod and pods.
func BenchmarkGpuadmit(b *testing.B) {
	for _, n := range benchSizes() {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			p := benchPeers(b, n)
			ctx := context.Background()
			pod := newPod("bench", "reviewed", podMiB)
			if v, err := p.ga.review(ctx, pod); err != nil || v.denied {
				b.Fatalf("verdict %+v, %v", v, err)
			}
			t := benchtimer.New()
			b.ReportAllocs()
			for b.Loop() {
				t.Begin()
				if _, err := p.ga.review(ctx, pod); err != nil {
					b.Fatal(err)
				}
				t.End()
			}
			t.Report(b)
		})
	}
}
