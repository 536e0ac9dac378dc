// Package admitqueue holds the namespaces' admission queues: each GPU pod's
// review is decided in order and committed in rounds to the namespace's
// GPUReservationSet (API group gpuadmit.io), the reservations every webhook
// replica shares, written with the object's resourceVersion (compare and
// swap, as the in-tree ResourceQuota admission commits quota status), so
// that several replicas never admit the same free MiB twice; and it tidies
// those objects. The objects are the one owner of the reservation state;
// the ledger holds none and is handed, with each decision, the
// reservations to count.
//
// A review walks down, one file after the other:
//
//  1. Store.Admit (store.go) is the entry: pkg/admission's validating
//     handler hands it a GPU pod's CREATE.
//  2. The namespace's queue (queue.go): the review waits there for the
//     namespace's worker, with the reviews that arrived beside it.
//  3. A round (commit.go): the worker loads the object, tidies it
//     (tidy.go), decides each review of the round in order through the
//     Decider, handed the reservations of the object and of the reviews
//     before it (decide.go), and writes them all in one status update
//     with compare and swap.
//  4. The answer: the decision's result is returned only after the write
//     succeeded. A conflict (another replica wrote first) loads the object
//     again and decides the whole round again, within the reviews'
//     deadlines.
//
// A review never replaces a reservation, and an object holds at most
// MaxReservations (a review at that cap waits, within its deadline, for
// one to end); a review denied only because of unconfirmed reservations
// waits for them, holding the room it waits for, and the reviews that
// waited are decided again smallest first (settle.go); confirmAfter is
// checked against the review budget, loudly (wait.go).
//
// A reservation's life in the object (its state machine) and the rule by
// which a replica counts it are pkg/reservation's.
//
// A team quota (GPUClusterQuota) that counts the namespace adds its own
// object, in gpuadmit's namespace, to the round: loaded and tidied beside
// the namespace's, written before it, in the order of the teams' names;
// the namespaces that left a team while charged stay counted for
// teams.leaveGrace (teams.go, departures.go, teamclean.go).
//
// A gang (pkg/gang) is admitted whole or not at all: its first pod holds
// room for the rest of the gang in the same object and the same write
// (gangs.go); the holds are tidied with the reservations (gangtidy.go).
//
// Beside the rounds, the tidying. How far every replica's pod watch got
// comes from the replicas' progress Leases (Membership, pkg/membership):
// renewed on a period, and, while an object holds a reservation of a pod
// a replica's watch recorded (Changed calls Membership.Hurry), soon after
// each change of its progress (pkg/membership's intervals), so that a reservation lasts a few
// writes rather than a second or two: a smaller object is a cheaper write,
// for the API server and for every replica's watch. A reservation whose
// pod the tidying replica recorded is removed at once, unmarked, when
// every live replica's watch already passed that record (the same rule as
// for a mark, one write sooner). A replica counts a reservation until its
// own watch recorded the pod (reservation.Countable), and one whose watch
// is behind removedResourceVersion waits before deciding. Marks and
// removals ride on the namespace's next write, made by the worker: an
// admission round's, or a tidy job of the cleaner's round (cleaner.go),
// which also has pkg/absence confirm absence by reading pods, confirmAfter
// after a reservation was first seen (derived from the cluster's other
// validating webhooks). Nothing ends on a timer; schedules use
// each replica's own clock, never another's timestamps, so clock skew does
// not matter. A deleted object's reservations are kept and written back
// (repair.go). A replica that was paused or cut off proves its view of a
// namespace before deciding there again (fresh.go).
//
// What users read (kubectl get gpuusage: used, reserved and hard per
// resource, printer columns, conditions) is another object, the
// namespace's GPUUsage, written by pkg/summary's Summarizer on the elected
// replica only: no summary write moves the resourceVersion the admission
// rounds compare and swap, so none makes them conflict. A conflict is
// counted by the cause the winning write left in the object
// (status.lastWrite: admission or tidy).
package admitqueue
