package gpuusage

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
)

func progressOf(replica, addr string, clk *clock, others map[string]string) *Progress {
	p := newProgress(nil, "gpuadmit-system", replica, clk, nil, func() string { return addr }, logr.Discard())
	p.address()
	for name, a := range others {
		p.observed[p.leaseName(name)] = &observation{at: clk.now, address: a, known: true}
	}
	return p
}

// TestOwner: every replica names the same owner for a namespace, the
// namespaces spread over the replicas, and a replica that advertises no
// address, or whose Lease stopped changing, owns nothing.
func TestOwner(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	addrs := map[string]string{"a": "10.0.0.1:9443", "b": "10.0.0.2:9443", "c": "10.0.0.3:9443"}
	replicas := map[string]*Progress{}
	for name, addr := range addrs {
		others := map[string]string{}
		for n, a := range addrs {
			if n != name {
				others[n] = a
			}
		}
		replicas[name] = progressOf(name, addr, clk, others)
	}
	owned := map[string]int{}
	for i := range 300 {
		ns := fmt.Sprintf("team-%d", i)
		want, _ := replicas["a"].Owner(ns)
		for name, p := range replicas {
			got, self := p.Owner(ns)
			if got != want || self != (got == addrs[name]) {
				t.Fatalf("%s: replica %s names %s (self %v), replica a names %s", ns, name, got, self, want)
			}
		}
		owned[want]++
	}
	for name, addr := range addrs {
		if owned[addr] < 60 {
			t.Errorf("replica %s owns %d of 300 namespaces: the hash does not spread", name, owned[addr])
		}
	}
	// c stops advertising (not ready), then b's Lease stops changing.
	p := replicas["a"]
	p.observed[p.leaseName("c")].address = ""
	clk.now = clk.now.Add(ownerStale)
	p.observed[p.leaseName("c")].at = clk.now
	for i := range 100 {
		if got, self := p.Owner(fmt.Sprintf("team-%d", i)); !self || got != addrs["a"] {
			t.Fatalf("with b stale and c not ready, a must own everything; got %s", got)
		}
	}
	// A replica that advertises nothing decides everything itself.
	if _, self := progressOf("d", "", clk, addrs).Owner("team-1"); !self {
		t.Fatal("a replica without an address forwarded")
	}
}

// TestFallback: a replica that owns a namespace but cannot decide sends its
// reviews to the replica that owns it without it (every replica agrees on
// which), for as long as the others' Leases were seen change within
// leaseDuration (a replica cut off from the API server sees no change).
func TestFallback(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	addrs := map[string]string{"a": "10.0.0.1:9443", "b": "10.0.0.2:9443", "c": "10.0.0.3:9443"}
	a := progressOf("a", addrs["a"], clk, map[string]string{"b": addrs["b"], "c": addrs["c"]})
	without := progressOf("b", addrs["b"], clk, map[string]string{"c": addrs["c"]}) // the cluster without a
	for i := range 100 {
		ns := fmt.Sprintf("team-%d", i)
		if _, self := a.Owner(ns); !self {
			continue
		}
		want, _ := without.Owner(ns)
		if got := a.Fallback(ns); got != want {
			t.Fatalf("%s: a falls back to %s, the cluster without a owns it on %s", ns, got, want)
		}
	}
	clk.now = clk.now.Add(leaseDuration)
	if got := a.Fallback("team-1"); got != "" {
		t.Fatalf("no Lease seen change for leaseDuration: fallback %s, want none", got)
	}
}
