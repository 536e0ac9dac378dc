package membership

import (
	"hash/fnv"
	"time"
)

// Every replica may decide in every namespace: the write with the object's
// resourceVersion keeps them exact. But replicas that write one object at
// once conflict and decide again, which costs a read and a write each time;
// so each namespace has an owner, the replica that the reviews of its GPU
// pods are forwarded to (pkg/server), chosen by rendezvous hashing over the
// live replicas that advertise an address. Replicas that disagree on the
// owner (one saw a Lease change that another has not yet) only conflict
// more for a moment; nothing depends on them agreeing.

// Advertise sets the address this replica takes forwarded reviews at ("":
// none, while it cannot decide): the server tells it when its readiness
// changes, the next renewal publishes it, and Owner counts it.
func (p *Members) Advertise(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.advertised = addr
}

// address is the address to publish.
func (p *Members) address() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.advertised
}

// Owner returns the address of the replica that owns namespace ns, and
// whether that is this replica (also when no replica advertises one).
func (p *Members) Owner(ns string) (addr string, self bool) {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	own := p.advertised
	if own == "" {
		return "", true
	}
	best, bestAddr := score(ns, p.replica), own
	for name, o := range p.observed {
		if name == p.leaseName(p.replica) || o.address == "" || now.Sub(o.at) >= ownerStale {
			continue
		}
		if sc := score(ns, name[len(p.leaseName("")):]); sc > best {
			best, bestAddr = sc, o.address
		}
	}
	return bestAddr, bestAddr == own
}

// Fallback returns the address of the replica that would own namespace ns
// were this one gone: the best of the others that advertised an address
// within leaseDuration (a replica cut off from the API server cannot see
// the Leases change, so the last it saw is what it has); "" for none.
func (p *Members) Fallback(ns string) string {
	now := p.clock.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	var best uint64
	addr := ""
	for name, o := range p.observed {
		if name == p.leaseName(p.replica) || o.address == "" || now.Sub(o.at) >= leaseDuration {
			continue
		}
		if sc := score(ns, name[len(p.leaseName("")):]); addr == "" || sc > best {
			best, addr = sc, o.address
		}
	}
	return addr
}

// ownerStale: a replica whose Lease (renewed every second) has not changed
// for this long is not sent reviews (it is likely gone; it is still waited
// for by the cleaner until leaseDuration).
const ownerStale = 3 * time.Second

// score is the rendezvous hash of (namespace, replica).
func score(ns, replica string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(ns))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(replica))
	return h.Sum64()
}
