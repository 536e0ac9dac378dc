// Package absence confirms that the pod (or claim) of a reservation nobody
// recorded does not exist, so that the tidying may end the reservation: a
// create that failed after admission, or a review not sent by the API
// server, leaves a reservation no watch will ever record.
//
// A Confirmer is handed, never asked back: the readers of pods, claims and
// webhook configurations, what this replica's watch recorded (Records), and
// each GPUReservationSet to check. It keeps one replica's schedule: a
// reservation's pod is first read confirmAfter after this replica first
// saw it (the longest timeout of the cluster's other validating webhooks
// on pod creates, plus a margin, window.go; or the configured value; never
// less than twice the slowest recording recently observed), then again,
// backing off to RecheckMax, while the pod exists unseen or the read
// fails. A pod is absent when reading it finds nothing, or finds another
// pod (another UID) under its name; many due reservations of one namespace
// are confirmed with one list. The schedules use this replica's own clock
// only, so clock skew between replicas does not matter.
//
// The admission queues (pkg/admitqueue) own the Confirmer: their tidying
// removes what it found absent (IsAbsent), and a review waiting for
// unconfirmed reservations asks when each is due (DueAt).
package absence
