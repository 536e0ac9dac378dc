// Package summary writes what users read of a namespace's GPU usage: its
// GPUUsage (kubectl get gpuusage: used, reserved and hard per managed
// resource with the ResourceQuota that sets it, the printer columns,
// conditions naming input gpuadmit cannot use, and the workloads whose pods
// were denied lately, from the denials' Events: informational only), from
// the ledger and the reservations the replicas count (reservation.Reader). One replica writes
// them, the one elected through the Lease gpuadmit-usage-status, with
// merge patches, only when a namespace's summary changed and at most once
// per MinGap. The reservations themselves are in the namespace's
// GPUReservationSet, which this package never writes: no summary write can
// make an admission's compare-and-swap conflict.
package summary
