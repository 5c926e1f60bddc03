// Package zendesk delivers tickets to Zendesk Support through its ticket
// API: POST /api/v2/tickets.json with an Idempotency-Key header and the
// oncecall ticket id as external_id, and lookup by
// GET /api/v2/tickets.json?external_id=….
//
// Its capabilities are fixed here from Zendesk's documented behaviour, not
// configured: it deduplicates by key (the window declared is DedupWindow,
// shorter than the one reported) and it can be looked up (trusting a miss
// only after SettleDelay). FACTS.md lists every Zendesk fact the adapter
// relies on, its source, and what is done where a fact could not be
// verified.
//
// A Zendesk requester must be a Zendesk user, and oncecall's users are
// not: the ticket's requester is the API user (or Options.RequesterID),
// and oncecall's tenant and user id are carried in custom ticket fields
// when Options names them, else in a block that starts the first comment,
// before the model's text, whose look-alike lines are marked.
package zendesk
