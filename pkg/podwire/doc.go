// Package podwire is the slim Pod: what the ledger reads of a Pod, and
// nothing else. PodTransform slims a decoded Pod (the informer transform);
// ListWatch lists and watches pods through a client whose protobuf decoder
// skims the API server's bytes into the same slim objects without decoding
// the rest (podskim.go, podscan.go, podcodec.go), which is most of a
// relist's decoding and allocation left out. The decoder is checked
// against the generated code: its output on random pods, and on damaged
// bytes, is compared with the transform of what the generated decoder
// makes of the same bytes (podskim_prop_test.go, podscan_test.go).
//
// It knows the families (pkg/effective) and the device annotations
// (pkg/devices), not the ledger or the watches.
package podwire
