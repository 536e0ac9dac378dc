package app_test

// The example pods and cluster dumps, from this package's directory.
const (
	pods  = "../../../examples/pods/"
	state = "../../../examples/state/"
)
