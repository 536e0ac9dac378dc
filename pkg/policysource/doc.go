// Package policysource is the one place that says which policy sources the
// webhook loads, so that the command line loads a cluster's policies
// exactly as the webhook does (pkg/policysync calls it too).
//
// After the built-in policies come the configuration's policy directory,
// when it names one, then every ConfigMap of the webhook's namespace that
// the configuration's policy.configMapSelector selects, sorted by name,
// each the source "configmap NAMESPACE/NAME": its keys ending in .rego are
// modules, those ending in _test.rego their tests. The engine
// (policy.Engine.Load) then compiles the whole set and runs its tests
// before it activates it; a set that fails is rejected as a whole.
//
// The accepted set (AcceptedConfigMap, accepted.go) is the snapshot of
// those sources (Read) that a replica last activated, stored with its
// revision and digest; a replica that starts while the cluster's set is
// rejected runs it, after compiling and testing it like any other set.
package policysource
