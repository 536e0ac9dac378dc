// Package policysync keeps the policy engine's active set in step with
// its sources: the policy directory and the label-selected ConfigMaps of
// the server's namespace. A set that fails to compile or test is rejected
// and the active one stays; a set activated is stored as the accepted set,
// which a replica starting while the cluster's set is rejected runs
// instead; each load's outcome is written back on the ConfigMaps.
package policysync
