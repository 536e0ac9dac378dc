// Package relist measures a cold start on a large cluster: how long a
// process takes from exec to "watches synced and a decision made" when the
// API server holds N pods (default 100k over 200 namespaces, a fifth of
// them GPU pods, every one with the managedFields the API server writes)
// and M nodes, listing Pods, Nodes, ResourceQuotas and Namespaces in JSON
// and in protobuf, and the process's resident memory at that moment.
//
// BenchmarkRelist fills an envtest API server once, then starts a child
// process per encoding (this test binary, re-executed into
// TestRelistChild) that builds the ledger, its informer feed and the policy
// engine as cmd/webhook does, and reports when it decided; the parent
// times it from exec. `make bench-relist` runs it at full size
// (GPUADMIT_RELIST_PODS, GPUADMIT_RELIST_NODES); `make test` runs it once at
// a small size so that it cannot rot.
package relist
