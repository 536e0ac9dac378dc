package membership

import (
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	clocktesting "k8s.io/utils/clock/testing"
)

func membersOf(replica, addr string, clk *clocktesting.FakePassiveClock, others map[string]string) *Members {
	p := New(nil, Options{Namespace: "gpuadmit-system", Replica: replica, Clock: clk, Log: logr.Discard()})
	p.Advertise(addr)
	for name, a := range others {
		p.observed[p.leaseName(name)] = &observation{at: clk.Now(), address: a}
	}
	return p
}

// TestOwner: every replica names the same owner for a namespace, the
// namespaces spread over the replicas, and a replica that advertises no
// address, or whose Lease stopped changing, owns nothing.
func TestOwner(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	addrs := map[string]string{"a": "10.0.0.1:9443", "b": "10.0.0.2:9443", "c": "10.0.0.3:9443"}
	replicas := map[string]*Members{}
	for name, addr := range addrs {
		others := map[string]string{}
		for n, a := range addrs {
			if n != name {
				others[n] = a
			}
		}
		replicas[name] = membersOf(name, addr, clk, others)
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
	clk.SetTime(clk.Now().Add(ownerStale))
	p.observed[p.leaseName("c")].at = clk.Now()
	for i := range 100 {
		if got, self := p.Owner(fmt.Sprintf("team-%d", i)); !self || got != addrs["a"] {
			t.Fatalf("with b stale and c not ready, a must own everything; got %s", got)
		}
	}
	// A replica that advertises nothing decides everything itself.
	if _, self := membersOf("d", "", clk, addrs).Owner("team-1"); !self {
		t.Fatal("a replica without an address forwarded")
	}
}

// TestFallback: a replica that owns a namespace but cannot decide sends its
// reviews to the replica that owns it without it (every replica agrees on
// which), for as long as the others' Leases were seen change within
// leaseDuration (a replica cut off from the API server sees no change).
func TestFallback(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	addrs := map[string]string{"a": "10.0.0.1:9443", "b": "10.0.0.2:9443", "c": "10.0.0.3:9443"}
	a := membersOf("a", addrs["a"], clk, map[string]string{"b": addrs["b"], "c": addrs["c"]})
	without := membersOf("b", addrs["b"], clk, map[string]string{"c": addrs["c"]}) // the cluster without a
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
	clk.SetTime(clk.Now().Add(leaseDuration))
	if got := a.Fallback("team-1"); got != "" {
		t.Fatalf("no Lease seen change for leaseDuration: fallback %s, want none", got)
	}
}
