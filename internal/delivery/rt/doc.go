// Package rt delivers tickets to Best Practical's Request Tracker 5
// through its REST 2.0 API: POST /REST/2.0/ticket with the delivery's key
// in a ticket custom field, and lookup by that field with TicketSQL,
// GET /REST/2.0/tickets?query=CF.{OncecallKey} = '…'.
//
// RT can be looked up but cannot deduplicate: a second create with the
// same key is a second ticket; with UniqueValues on the field RT makes
// the duplicate without the key and still answers 201; a custom field it
// does not know is dropped without a word; and TicketSQL's = ignores
// ASCII case. So the adapter proves what it relies on instead of trusting
// it (FACTS.md lists each fact, how it was measured and what is done
// with it):
//
//   - before its first request, and again every ReadyFor, it reads the
//     queue and requires oncecall's fields (Fields) on it, so that a
//     lookup's "no such ticket" means one;
//   - after a 201 it searches the key and requires the created ticket,
//     and only it, to carry the key exactly, and its tenant, user and
//     ticket fields to be oncecall's;
//   - a lookup accepts only tickets whose field carries the key exactly
//     (compared here, case and all): one is the ticket, more than one is
//     a finding for a person (delivery.Inconsistent), never a guess.
//
// The ticket's text is the model's, sent as text/plain, which RT shows
// escaped; oncecall's tenant and user go in custom fields the model
// cannot write, never in the text.
package rt
