// Package membership is what the webhook replicas know of each other: each
// publishes, in a Lease in the server's namespace renewed every renewEvery,
// how far its pod watch got and where it takes forwarded reviews (while
// hurried, Hurry: within progressEvery of a change of its progress, as
// reservations wait for it); each reads the others' Leases from its informer
// every observeEvery (members.go holds the intervals) and tells
//
//   - MinLive: the least pod-watch progress over the live replicas (a
//     recorded reservation may be removed once every live replica's watch
//     passed the version it was recorded at);
//   - Owner and Fallback: which replica a namespace's reviews go to
//     (rendezvous hashing over the replicas that advertise an address);
//   - Announced, Connected, SuspectSince: whether this replica may decide
//     (its Lease is known to the others; it reaches the API server; it was
//     not paused or cut off since a namespace was last proved).
//
// Liveness of the others is judged by when this replica saw their Lease
// change, on its own clock: no timestamps are compared across replicas, so
// clock skew does not matter. Pauses and cut-offs of this replica are told
// by a heartbeat on the monotonic clock (liveness.go).
package membership
