// Package outcome answers the application's question "what became of the
// operation I sent under this request_id for this user?" from what oncecall
// holds: nothing, or the operation's function, its result as the model saw
// it, when it was created and, with a destination, its ticket's delivery.
// The store keeps one record per user and request id, written in the same
// transaction as the operation it names, so the answer is one strongly
// consistent read (two with a destination: the delivery lives on the
// ticket). Read is the one function behind the application's GET /outcome
// and oncecall-admin find -user, so the two cannot disagree.
package outcome
