// Package serving is the HTTPS port the admission reviews arrive on,
// a controller-runtime webhook.Server built to face untrusted clients:
//
//   - TLS 1.3 by default (1.2 when asked for);
//   - client authentication (Clients): with a client CA, every connection
//     must present the API server's client certificate (chaining to that CA,
//     with an allowed common name) or the replicas' shared serving
//     certificate, or the handshake fails; without one, a certificate is
//     asked for but optional, and only the replicas' own certificate may
//     carry the header that marks a forwarded review (PeerHeader);
//   - bounded reads (Limits): each request's header and body must arrive
//     within ReadTimeout, a body is at most MaxBodyBytes, the bodies read at
//     once hold at most BodyBudget bytes (PerClientBudget from one client
//     address), at most MaxInFlight requests are handled at once (a slot
//     is taken once the body is read: stalled bodies hold none), and one
//     client address that did not authenticate has at most
//     PerClientInFlight requests in flight (a quarter of MaxInFlight by
//     default), so a crowd of slow, stalled or oversized clients costs a
//     bounded amount of memory and a review from another address (the API
//     server's) is still read and handled at once.
//
// Requests that the limits refuse are answered with a status saying which
// limit, never read further.
package serving
