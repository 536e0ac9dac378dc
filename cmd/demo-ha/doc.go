// Command demo-ha is `make demo-ha`: a control plane, three webhook
// replicas behind a round-robin proxy, and three scenarios that try to get
// pods past a quota across replicas, each printed as one line of measured
// figures. It exits non-zero when a line's invariant does not hold.
package main
