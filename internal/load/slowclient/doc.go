// Package slowclient is test support: clients that attack an HTTPS server
// by sending all but the last byte of a large request body and stalling,
// from a loopback address of their own (so that a server can tell them from
// the clients on 127.0.0.1). They only ever dial loopback addresses.
package slowclient
