// Package certs manages the webhook's serving certificate without
// cert-manager: a self-signed CA and a serving certificate signed by it, kept
// in a Secret so that a restarted server keeps the CA the API server already
// trusts, renewed before they expire, with the CA patched into the caBundle
// of the webhook configurations. The server reads the current certificate
// through GetCertificate, so nothing is written to disk (the container's
// root filesystem stays read-only).
package certs
