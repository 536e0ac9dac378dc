// Package testnode builds Node objects for tests: GPU nodes announcing
// their devices in gpuadmit.io/gpu-devices (the node agent's annotation),
// or nodes with any annotations (HAMi's registration, malformed values).
// Every node gets the UID "uid-node-<name>".
package testnode
