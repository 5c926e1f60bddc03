// Package callback serves AIVAX Protocol Function callbacks exactly once per
// operation.
//
// Handler.Call takes the nonce header and the body of one callback and walks
// it through the same steps every time: check the nonce's shape and cost,
// verify it with BCrypt while the user's record is read from the store
// (strongly consistent, on every call: no cache), check the user and the
// function, validate the arguments, derive the operation key, and hand the
// claim and the ticket to the Store in one transaction. Every step that
// refuses answers before anything is written or any stored result is
// disclosed, and nothing is disclosed after the call's Deadline. A ticket
// and its claim carry the version of the user's record the call read, and
// are delivered and shown only while the record vouches for them
// (identity.User.Vouches), however late their write landed. Handler.Serve walks a
// Call that another door decoded (the MCP door's tools/call) through the
// same steps. Transport adapters (package httpapi for net/http, package
// apigw for API Gateway on Lambda) only move headers and bodies in and out.
//
// One call on its way through is one value, whose methods are those steps:
// the file call.go reads top-down in their order.
//
// # Glossary
//
// The words of oncecall's code and pages, defined once; the section
// "oncecall's words" of docs/glossary.md says the same and names the
// identifier that holds each.
//
//   - attempt budget: the attempts and the age a delivery may spend before
//     it ends failed or uncertain.
//   - attention: the deliveries that wait for the sweep or for a person
//     (queued, failed, uncertain), found through a sparse index.
//   - audit key: the stack's KMS key under which the decision role proves
//     each audit entry.
//   - busy: the answer to a call the store could not serve before its
//     deadline; nothing was written, and the call may be sent again.
//   - decision role: the IAM role that alone writes a delivery's decision
//     and its audit, and makes its proof.
//   - delivery: a ticket's way to the team's helpdesk, with its state,
//     attempts and receipt, stored on the ticket item.
//   - destination: the helpdesk tickets are delivered to (a webhook,
//     Zendesk, Request Tracker).
//   - door: a way AIVAX reaches oncecall, the Protocol Function callback or
//     the MCP server. Each decodes its request into the same Call and says,
//     as a Door, where it carries the nonce, the user and the request id.
//   - function source: the URL AIVAX fetches to learn the functions,
//     GET /functions here.
//   - hook key: the secret shared with the AIVAX account.
//   - key: the operation key, a SHA-256 of the derivation's version, the
//     tenant, the request id, the function and the normalized arguments.
//   - lease: one delivery attempt's hold on a delivery, so that no other
//     attempt sends the ticket meanwhile.
//   - nonce: a BCrypt hash of the hook key, sent with every request.
//   - operation: one change the application means to make, named by the
//     request id it minted; the store keeps it as one record with its
//     result.
//   - outbox: the delivery written, queued, on the ticket item in the same
//     transaction as the operation's claim.
//   - outcome read: GET /outcome, the application's read of what became of
//     one user's request id.
//   - policy: what makes two calls the same operation, per function.
//   - replay: a call whose key a completed operation of the same user and
//     arguments holds; it gets the stored result, deduplicated.
//   - request horizon: how long after the worker gave up on a create that
//     create may still reach the helpdesk.
//   - request id: the operation's name, context.metadata.request_id.
//   - settle: a person's audited decision on a delivery the worker could
//     not finish.
//   - settle delay: how long after a create a helpdesk's lookup may still
//     miss the ticket.
//   - stored result: the answer an operation's first call got, returned to
//     every replay.
//   - sweep: the delivery worker's scheduled pass over what is due.
//   - tenant: the customer a user belongs to, from oncecall's user record.
//   - uncertain: a delivery the helpdesk may or may not have created and
//     cannot be asked about; only a person settles it.
package callback
