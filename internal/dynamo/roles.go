package dynamo

import "slices"

// CreateAttributes returns the attributes the create transaction names
// for its operation and its ticket (Store.CreateInput: the operation's Put
// and the ticket's Update, with a new delivery), sorted. The callback's
// role limits its PutItem of operations and its UpdateItem of tickets to
// these (dynamodb:Attributes, template.yaml), and has no PutItem of
// tickets, which would replace one whole: never the audit of a person's
// decision (attrAudit), never the delivery's state (attrDelivery: a new
// ticket is queued by its absence, queuedCondition), nor what only a
// decision or an attempt records (the helpdesk's id and URL, the lease,
// the reason). So the internet-facing function can neither write or erase
// an audit entry nor queue again a delivery that has moved on.
func CreateAttributes() []string {
	a := []string{
		PartitionKey, TTLAttribute, attrKind, attrUserID, attrTenant, attrFunction, attrState, attrFingerprint,
		attrCreatedAt, attrTicketID, attrResult, attrTitle, attrDescription, attrPriority, attrTags, attrOpKey,
		attrRequestID, attrLookup, attrLookupSort, attrDest, attrDestKey, attrAttempts, attrSince,
		attrVersion, attrAttention, attrAttentionDue, attrNextAt, attrUserVer, attrToken,
	}
	slices.Sort(a)
	return a
}

// DecisionAttributes returns the attributes a person's decisions name
// (Admin.Settle's UpdateItem of the ticket and its extension of the
// operation's expiry, Admin.Reschedule's UpdateItem), sorted. The decision
// role docs/deploy.md gives limits its UpdateItem to these
// (dynamodb:Attributes): it may write the audit and the delivery's state,
// never a stored result, the ticket's content, its owner or tenant.
func DecisionAttributes() []string {
	a := []string{
		PartitionKey, TTLAttribute, attrDelivery, attrLeaseOwner, attrLeaseUntil, attrVersion, attrSince, attrAudit,
		attrReason, attrNextAt, attrDestID, attrDestURL, attrDeliveredAt, attrSafeAfter, attrMaybeSent, attrAttempts,
		attrAttention, attrAttentionDue, attrLegacyAttention, attrLegacyAttentionAt,
	}
	slices.Sort(a)
	return a
}
