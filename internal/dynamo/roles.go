package dynamo

import "slices"

// CreateAttributes returns the attributes the create transaction's Puts
// name (Store.CreateInput: the operation item, the ticket item and a new
// delivery), sorted. The callback's role limits its PutItem to these
// (dynamodb:Attributes, template.yaml): never the audit of a person's
// decision (attrAudit) nor what only a decision or an attempt records
// (the helpdesk's id and URL, the lease, the reason), so that the
// internet-facing function cannot write an audit entry.
func CreateAttributes() []string {
	a := []string{
		PartitionKey, TTLAttribute, attrKind, attrUserID, attrTenant, attrFunction, attrState, attrFingerprint,
		attrCreatedAt, attrTicketID, attrResult, attrTitle, attrDescription, attrPriority, attrTags, attrOpKey,
		attrRequestID, attrLookup, attrLookupSort, attrDelivery, attrDest, attrDestKey, attrAttempts, attrSince,
		attrVersion, attrAttention, attrAttentionDue, attrNextAt, attrUserVer,
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

// RequestAttributes returns the attributes the create transaction's
// Update of the request item names (Store.CreateInput), sorted. The
// callback's role limits its UpdateItem of request items to these.
func RequestAttributes() []string {
	a := []string{
		PartitionKey, attrKind, attrUserID, attrRequestID, attrTenant, attrFunction, attrOpKey, attrCreatedAt,
		attrOperations, attrTicketID, attrResult,
	}
	slices.Sort(a)
	return a
}
