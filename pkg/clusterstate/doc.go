// Package clusterstate reads, from a live cluster, what the command line
// otherwise reads from a 'kubectl get -o yaml' dump: the Pods, Nodes and
// ResourceQuotas, as the same manifest.Objects the dump reader returns, so
// that both feed the same ledger. It also reads the reservations of a
// namespace's GPUReservationSet (pods admitted that not every webhook replica
// has recorded yet) as the ledger mirrors them, and gpuadmit's own
// configuration and policy ConfigMaps in its namespace.
//
// Pods and Nodes are listed in every namespace, since device usage on a
// node sums every namespace's pods. When listing every namespace's pods is
// forbidden, the pods of the namespaces asked for are listed instead; when
// listing Nodes is forbidden, there are none. Both are reported as warnings
// rather than errors.
package clusterstate
