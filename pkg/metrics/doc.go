// Package metrics holds gpuadmit's Prometheus collectors that are read at
// scrape time or counted outside the request path: the ledger's sizes and
// the watches' freshness, every namespace's quotas, usage and problems,
// the devices' capacity and usage, the policy engine's status, the
// reservation store's counters, the build and the certificates' expiry,
// and how /metrics is served. It reads the ledger and the reservations
// through small interfaces; it decides nothing.
package metrics
