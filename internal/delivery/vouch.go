package delivery

import (
	"context"

	"github.com/oncecall/oncecall/internal/ticket"
)

// Voucher says whether a ticket's user record, as it is now, still stands
// behind the ticket (identity.User.Vouches): the user exists, is active,
// in the ticket's tenant, and no change that took access away came after
// the version of the record the ticket was made under. *dynamo.Store
// implements it.
type Voucher interface {
	Vouches(ctx context.Context, t ticket.Ticket) (bool, error)
}

// CodeWithheld is the LastCode of a delivery the worker ended without a
// request because its ticket's user record no longer vouches for it.
const CodeWithheld = "withheld"

// codeUserUnread is the LastCode of an attempt that could not read the
// ticket's user record, and so sent nothing.
const codeUserUnread = "user_unread"

// withhold is the one check of a ticket's user before the leased attempt
// on rec sends a create: done is true when it ended the attempt, with the
// delivery and report to record. A ticket whose record no longer vouches
// for it (its user disabled, deleted, or a function revoked after the
// call that made it read the record, however late its write landed) is
// never sent: failed, or uncertain when an earlier attempt may have sent
// it. A record that cannot be read sends nothing now and is tried again.
func (w *Worker) withhold(ctx context.Context, t ticket.Ticket, rec Record) (next Record, rep Report, done bool) {
	if w.Voucher == nil {
		return rec, Report{}, false
	}
	ok, err := w.Voucher.Vouches(ctx, t)
	switch {
	case err != nil:
		next, rep = w.retry(rec, Result{Code: codeUserUnread}, queuedAt(&rec, t.CreatedAt), false)
		return next, rep, true
	case ok:
		return rec, Report{}, false
	case rec.MaybeSent:
		next, rep = w.end(rec, Uncertain, Result{Code: CodeWithheld}, w.now())
		return next, rep, true
	}
	next, rep = w.end(rec, Failed, Result{Code: CodeWithheld}, w.now())
	return next, rep, true
}
