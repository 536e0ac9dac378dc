// Package creates is test and demo support: it builds the GPU pods that
// suites and demos create (as objects, or as manifests for kubectl),
// creates them from several clients at once, and classifies each outcome
// (admitted, denied by the quota, refused for unavailability, failed
// otherwise) in a Tally.
package creates
