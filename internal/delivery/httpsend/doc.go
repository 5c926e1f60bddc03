// Package httpsend is the HTTP half every destination adapter shares: one
// request sent, and what its answer (or its absence) establishes, classified
// into a delivery.Result by the rules oncecall applies to every helpdesk.
//
// The hard part is a request that gets no answer. A net/http/httptrace
// trace records whether a connection was obtained and whether the whole
// request was written: a failure before that is Unavailable (nothing reached
// the destination, sending again is safe); a failure after it (timeout,
// reset, end of stream, an answer that cannot be read) is Ambiguous, because
// the destination may have acted on the request.
//
// Go's transport quietly sends a request again when a kept-alive connection
// fails after the request was written, if the request carries an
// Idempotency-Key header. That is harmless for a destination that
// deduplicates by that key and a duplicate ticket for one that does not, so
// New keeps connections alive only when asked to (for deduplicating
// destinations). HTTP/2 is not used: the rules are those of HTTP/1.1's
// transport, which the tests exercise.
//
// Nothing here logs. Result.Code values come from a fixed vocabulary and
// never quote the ticket, a credential, a URL or the destination's answer;
// the destination's own words go to Result.Reason only, and only for a
// refusal.
package httpsend
