// Package webhook delivers tickets by oncecall's generic webhook contract,
// which any team can implement in front of its helpdesk:
//
//	POST $DESTINATION_URL
//	Content-Type: application/json
//	Idempotency-Key: <key, the same on every attempt for one ticket>
//	Authorization: Bearer <token>            (when a token is configured)
//
//	{"external_id": "<oncecall ticket id>", "tenant_id": "…", "requester": "<user id>",
//	 "title": "…", "description": "…", "priority": "low|normal|high|urgent",
//	 "tags": ["…"], "created_at": "<RFC 3339, UTC>"}
//
// answered 200 or 201 with {"id": "<helpdesk id>", "url": "<optional>"},
// and, when lookup is enabled:
//
//	GET $DESTINATION_URL?external_id=<oncecall ticket id>
//
// answered 200 with {"tickets": [{"id": …, "url": …, "external_id": …}]},
// an empty list when no ticket has that external id. Every listed ticket
// must carry the external id asked for; any other list is a bad answer.
//
// What the destination promises about duplicates (whether it deduplicates
// by Idempotency-Key and for how long, whether it can be looked up, how
// long a lookup may miss a new ticket) is configuration, passed to New in
// Options.Capabilities; the answers are classified by the rules of package
// httpsend.
package webhook
