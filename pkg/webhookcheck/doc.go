// Package webhookcheck compares the server's live configuration with
// gpuadmit's registered webhook configurations: a reviewTimeout not below a
// webhook's timeoutSeconds refuses the start, and governed resources the
// webhooks' matchConditions do not send to gpuadmit are reported, at start
// and every minute after.
package webhookcheck
