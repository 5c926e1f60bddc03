package delivery

import "fmt"

// Mover is who moves a delivery from one state to another.
type Mover string

// Movers.
const (
	// ByCallback: the callback's transaction writes a new ticket queued.
	ByCallback Mover = "callback"
	// ByWorker: an attempt, started by the stream or by the sweep, records
	// its result.
	ByWorker Mover = "worker"
	// ByOperator: a person's decision with oncecall-admin (delivery settle,
	// delivery recover).
	ByOperator Mover = "operator"
)

// Transition is one move of a delivery's state. From is "" for the
// creation of the ticket.
type Transition struct {
	From, To State
	By       Mover
	// On says when it happens.
	On string
}

// Transitions lists every move a delivery can make, and who makes it. The
// worker and the settle path refuse any other (Allowed), and the delivery
// state machine drawn in docs/delivery.md is checked against this list.
var Transitions = []Transition{
	{"", Queued, ByCallback, "ticket created with a destination"},
	{Queued, Delivered, ByWorker, "the helpdesk answered with its id, or a lookup found it"},
	{Queued, Queued, ByWorker, "nothing certain: a retry is scheduled"},
	{Queued, Failed, ByWorker, "refused, or attempts or age spent with no request that may have created it, or withheld: its user's record no longer vouches for it"},
	{Queued, Uncertain, ByWorker, "attempts or age spent, or withheld, after a request that may have created it, or the destination holds tickets that contradict each other (Inconsistent)"},
	{Queued, Queued, ByOperator, "delivery recover, or settle not-created"},
	{Queued, Delivered, ByOperator, "settle delivered"},
	{Queued, Abandoned, ByOperator, "settle abandoned"},
	{Failed, Queued, ByOperator, "settle not-created"},
	{Failed, Delivered, ByOperator, "settle delivered"},
	{Failed, Abandoned, ByOperator, "settle abandoned"},
	{Uncertain, Queued, ByOperator, "settle not-created"},
	{Uncertain, Delivered, ByOperator, "settle delivered"},
	{Uncertain, Abandoned, ByOperator, "settle abandoned"},
	{Abandoned, Queued, ByOperator, "settle not-created"},
	{Abandoned, Delivered, ByOperator, "settle delivered"},
}

// Allowed reports whether by may move a delivery from one state to
// another: whether Transitions lists the move.
func Allowed(from, to State, by Mover) bool {
	for _, t := range Transitions {
		if t.From == from && t.To == to && t.By == by {
			return true
		}
	}
	return false
}

// TransitionError is the error of a move Transitions does not list.
type TransitionError struct {
	From, To State
	By       Mover
}

func (e *TransitionError) Error() string {
	from := string(e.From)
	if from == "" {
		from = "(new)"
	}
	return fmt.Sprintf("delivery: the %s does not move a delivery from %s to %s", e.By, from, e.To)
}
