package dynamo

import (
	"slices"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
)

// TestDecisionAttributesCoverEveryDecision: each decision's UpdateItem
// names only DecisionAttributes (the decision role's dynamodb:Attributes),
// and those never include a stored result, the ticket's content or its
// owner.
func TestDecisionAttributesCoverEveryDecision(t *testing.T) {
	allowed := DecisionAttributes()
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range []Settlement{
		{TicketID: "t1", As: SettleDelivered, Expect: delivery.Uncertain, Version: 3, Receipt: delivery.Receipt{ID: "1", URL: "https://h/1"}, Actor: delivery.Actor{Who: "a"}},
		{TicketID: "t1", As: SettleNotCreated, Expect: delivery.Uncertain, Actor: delivery.Actor{Who: "a"}},
		{TicketID: "t1", As: SettleAbandoned, Expect: delivery.Failed, Reason: "r", Actor: delivery.Actor{Who: "a"}},
	} {
		in := settleInput("table", s, s.decision(at), at.Add(time.Hour))
		names := []string{PartitionKey}
		for _, n := range in.ExpressionAttributeNames {
			names = append(names, n)
		}
		for _, n := range names {
			if !slices.Contains(allowed, n) {
				t.Errorf("%s names %q, which DecisionAttributes lacks", s.As, n)
			}
		}
	}
	for _, never := range []string{attrResult, attrUserID, attrTenant, attrTitle, attrDescription, attrFunction, attrState, attrDest, attrDestKey, attrOpKey} {
		if slices.Contains(allowed, never) {
			t.Errorf("DecisionAttributes lets a decision write %q", never)
		}
	}
}
