// Package election runs work on the one replica elected through a Lease,
// and only there: losing the Lease stops the work and campaigns again,
// never ends the process, and nothing on the request path depends on it.
package election
