// Package delivery carries oncecall's tickets on to a team's helpdesk, at
// most once where the helpdesk allows it and never with more certainty than
// the helpdesk gives.
//
// The ticket item written in the callback's one transaction is the outbox
// record: it carries the delivery state. A Destination adapter (webhook,
// zendesk) sends one ticket and reports an Outcome; the rules of this
// package decide, from the destination's Capabilities and everything the
// earlier attempts established, whether to send, look the ticket up, wait,
// or stop and ask a person (uncertain). Nothing here knows DynamoDB or
// Lambda: the store and the event sources are adapters too.
package delivery
