// Package matchcond evaluates the CEL matchConditions of admission webhook
// configurations against a pod, the way the API server does, to tell whether
// a CREATE of that pod would reach a webhook at all.
//
// It compiles the conditions with the API server's own CEL environment and
// condition compiler (k8s.io/apiserver), and turns evaluation results into a
// decision with the API server's own matcher: a condition that evaluates to
// false means the webhook is not called; an evaluation error is resolved by
// the webhook's failurePolicy (Ignore: not called; Fail: the API server
// rejects the request, reported here as an error).
//
// Only matchConditions are evaluated: rules, namespaceSelector and
// objectSelector are not, and the request carries no user information.
package matchcond
