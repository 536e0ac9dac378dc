// Package feed is the watches that feed the ledger: informers on Nodes,
// ResourceQuotas, Namespaces and DRA's kinds (their transforms keep only
// what the ledger reads; their handlers apply every event, tombstones
// included), the GPUClusterQuota informer it is handed (gpuadmit's own
// kind, run by the manager's cache; its list joins the sync gate,
// NotSynced), and the pod watch through an ordered queue of its own
// (podfeed.go) whose progress is a resourceVersion up to which every pod
// event is applied (what a replica publishes, and what reservations are
// removed by). It also reports watches that fell behind the API server
// (freshness.go).
//
// It feeds a Sink, the interface it defines and *ledger.Ledger implements;
// it does not import the ledger. Pods are slimmed by pkg/podwire (the
// informer transform, or the pod client's protobuf decoder). The feed
// injects no faults: a lagging watch is a test's transport wrapper
// (internal/cluster/testhooks).
package feed
