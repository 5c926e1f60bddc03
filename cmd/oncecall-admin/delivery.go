package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
)

// Bounds of delivery list.
const defaultDeliveryLimit = 100

// msLayout shows delivery times to the millisecond, as they are stored.
const msLayout = "2006-01-02T15:04:05.000Z07:00"

func msTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(msLayout)
}

// deliveryView is a ticket's delivery as find and settle print it; field
// names are stable.
type deliveryView struct {
	// State is what a caller is told: in_progress while an attempt holds
	// a live lease, else StoredState.
	State          string `json:"state"`
	StoredState    string `json:"stored_state"`
	Destination    string `json:"destination"`
	IdempotencyKey string `json:"idempotency_key"`
	Attempts       int    `json:"attempts"`
	LastCode       string `json:"last_code"`
	LastStatus     int    `json:"last_status"`
	// MaybeSent: an attempt may have created the ticket at the helpdesk.
	MaybeSent     bool   `json:"maybe_sent"`
	NextAttemptAt string `json:"next_attempt_at,omitempty"`
	// LeaseUntil is set while an attempt holds a live lease.
	LeaseUntil  string `json:"lease_until,omitempty"`
	Since       string `json:"since,omitempty"`
	FirstSentAt string `json:"first_sent_at,omitempty"`
	HelpdeskID  string `json:"helpdesk_id,omitempty"`
	URL         string `json:"url,omitempty"`
	DeliveredAt string `json:"delivered_at,omitempty"`
	// Reason is the destination's refusal or the operator's reason. It
	// may quote the ticket: it is shown here, never logged.
	Reason  string `json:"reason,omitempty"`
	Version int64  `json:"version"`
	// Told is the "delivery" member the callback answers with now, what
	// the model reads.
	Told  delivery.View `json:"told"`
	Audit []auditView   `json:"audit"`
}

// auditView is one operator decision of a delivery's audit.
type auditView struct {
	At  string `json:"at"`
	Who string `json:"who"`
	// Via, Verified, SourceIdentity and Operator say how Who was
	// established (delivery.Actor), as whoever wrote the entry recorded
	// it: Verified is that writer's claim (the tool's, when it read the
	// identity from STS), not a proof; anyone allowed to write the item
	// could have written it. Operator is a label, not the identity.
	Via            string `json:"via,omitempty"`
	Verified       bool   `json:"verified"`
	SourceIdentity string `json:"source_identity,omitempty"`
	Operator       string `json:"operator,omitempty"`
	// Proof says whether the entry proves itself (proofProven: made with
	// the decision role's audit key, unchanged since; proofNotProven, or
	// proofNotChecked without an audit key), ProofNote why not.
	Proof      string `json:"proof"`
	ProofNote  string `json:"proof_note,omitempty"`
	Action     string `json:"action"`
	From       string `json:"from"`
	To         string `json:"to"`
	Reason     string `json:"reason,omitempty"`
	HelpdeskID string `json:"helpdesk_id,omitempty"`
	URL        string `json:"url,omitempty"`
	Note       string `json:"note,omitempty"`
}

func viewDelivery(r *delivery.Record, now time.Time) *deliveryView {
	if r == nil {
		return nil
	}
	v := &deliveryView{
		State: string(r.Reported(now)), StoredState: string(r.State), Destination: r.Destination,
		IdempotencyKey: r.Key, Attempts: r.Attempts, LastCode: r.LastCode, LastStatus: r.LastStatus,
		MaybeSent: r.MaybeSent, Since: msTime(r.Since), FirstSentAt: msTime(r.FirstSent),
		HelpdeskID: r.Receipt.ID, URL: r.Receipt.URL, DeliveredAt: msTime(r.DeliveredAt),
		Reason: r.Reason, Version: r.Version, Told: r.View(now), Audit: make([]auditView, 0, len(r.Audit)),
	}
	if r.State == delivery.Queued {
		v.NextAttemptAt = msTime(r.NextAt)
	}
	if r.Leased(now) {
		v.LeaseUntil = msTime(r.LeaseUntil)
	}
	for _, d := range r.Audit {
		v.Audit = append(v.Audit, auditView{
			At: msTime(d.At), Who: d.Who, Via: d.Via, Verified: d.Verified, SourceIdentity: d.SourceIdentity, Operator: d.Operator,
			Action: d.Action, From: string(d.From), To: string(d.To),
			Reason: d.Reason, HelpdeskID: d.Receipt.ID, URL: d.Receipt.URL, Note: d.Note,
		})
	}
	return v
}

// deliveryRows writes a delivery as rows of the two-column table find and
// settle print.
func deliveryRows(w io.Writer, d *deliveryView) {
	if d == nil {
		row(w, "delivery", "- (none: no destination was configured when the ticket was created)")
		return
	}
	state := d.State
	if d.Since != "" {
		state += " since " + d.Since
	}
	row(w, "delivery", state)
	row(w, "  destination", orDash(d.Destination))
	row(w, "  idempotency key", orDash(d.IdempotencyKey))
	last := "-"
	if d.LastCode != "" || d.LastStatus != 0 {
		last = orDash(d.LastCode)
		if d.LastStatus != 0 {
			last += fmt.Sprintf(" (HTTP %d)", d.LastStatus)
		}
	}
	row(w, "  attempts", fmt.Sprintf("%d; last outcome: %s", d.Attempts, last))
	if d.MaybeSent {
		row(w, "  maybe_sent", "true: an attempt may have created it at the helpdesk")
	} else {
		row(w, "  maybe_sent", "false")
	}
	if d.LeaseUntil != "" {
		row(w, "  in progress", "an attempt holds it until "+d.LeaseUntil)
	}
	if d.NextAttemptAt != "" {
		row(w, "  next attempt", d.NextAttemptAt)
	}
	if d.HelpdeskID != "" {
		ref := d.HelpdeskID
		if d.URL != "" {
			ref += " " + d.URL
		}
		row(w, "  helpdesk", ref)
	}
	if d.DeliveredAt != "" {
		row(w, "  delivered_at", d.DeliveredAt)
	}
	if d.Reason != "" {
		row(w, "  reason", strconv.Quote(d.Reason))
	}
	row(w, "  version", strconv.FormatInt(d.Version, 10))
	row(w, "  model is told", d.Told.Message)
	if len(d.Audit) == 0 {
		row(w, "  audit", "- (no operator decision)")
	}
	for i, a := range d.Audit {
		by := strconv.Quote(a.Who) + " " + proofLabel(a)
		if a.SourceIdentity != "" {
			by += ", source identity " + strconv.Quote(a.SourceIdentity)
		}
		if a.Operator != "" {
			by += ", operator label " + strconv.Quote(a.Operator)
		}
		line := fmt.Sprintf("%s %s by %s: %s -> %s", a.At, a.Action, by, a.From, a.To)
		if a.HelpdeskID != "" {
			line += ", helpdesk " + a.HelpdeskID
			if a.URL != "" {
				line += " " + a.URL
			}
		}
		if a.Reason != "" {
			line += ", reason " + strconv.Quote(a.Reason)
		}
		row(w, fmt.Sprintf("  audit %d", i+1), line)
		if a.Note != "" {
			row(w, "", a.Note)
		}
	}
}

// listedView is one delivery as delivery list prints it.
type listedView struct {
	TicketID      string `json:"ticket_id"`
	Tenant        string `json:"tenant"`
	RequestID     string `json:"request_id"`
	EnteredAt     string `json:"entered_at"`
	Attempts      int    `json:"attempts"`
	LastCode      string `json:"last_code"`
	LastStatus    int    `json:"last_status"`
	MaybeSent     bool   `json:"maybe_sent"`
	NextAttemptAt string `json:"next_attempt_at,omitempty"`
	Version       int64  `json:"version"`
}

func deliveryList(fs *flag.FlagSet) action {
	state := fs.String("state", "", "uncertain, failed or queued (queued: tickets waiting for an attempt, the first or a retry) (required)")
	olderThan := fs.Duration("older-than", 0, "only deliveries that entered the state at least this long ago, such as 1h (default: any)")
	tenant := fs.String("tenant", "", "only this tenant's tickets")
	limit := fs.Int("limit", defaultDeliveryLimit, fmt.Sprintf("at most this many (1 to %d)", dynamo.MaxListDeliveries))
	after := fs.String("after", "", "the cursor the previous page printed: list what follows it")
	return action{
		check: func() error {
			switch delivery.State(*state) {
			case delivery.Uncertain, delivery.Failed, delivery.Queued:
			case "":
				return usageError("-state is required: uncertain, failed or queued")
			default:
				return usageError("-state %q: list uncertain, failed or queued deliveries (delivered and abandoned ones need nobody; find -ticket shows one)", *state)
			}
			if *olderThan < 0 {
				return usageError("-older-than %s is negative", *olderThan)
			}
			if *tenant != "" {
				if err := checkTenant(*tenant); err != nil {
					return err
				}
			}
			if *limit < 1 || *limit > dynamo.MaxListDeliveries {
				return usageError("-limit %d is outside 1 to %d", *limit, dynamo.MaxListDeliveries)
			}
			return nil
		},
		run: func(ctx context.Context, s *session) error {
			now := s.tool.now()
			q := dynamo.DeliveryQuery{State: delivery.State(*state), Tenant: *tenant, Limit: *limit, After: *after}
			if *olderThan > 0 {
				q.EnteredBefore = now.Add(-*olderThan)
			}
			page, err := s.admin.Deliveries(ctx, q)
			if errors.Is(err, dynamo.ErrBadCursor) {
				return usageError("-after %q is not a cursor of this listing: pass the one the previous page of delivery list -state %s printed", *after, *state)
			}
			if err != nil {
				return err
			}
			out := struct {
				State      string       `json:"state"`
				Deliveries []listedView `json:"deliveries"`
				// Next is the -after of the next page; empty on the last.
				Next string `json:"next"`
			}{State: *state, Deliveries: []listedView{}, Next: page.Next}
			for _, d := range page.Deliveries {
				v := listedView{
					TicketID: d.TicketID, Tenant: d.Ticket.Tenant, RequestID: d.Ticket.RequestID, EnteredAt: msTime(d.Entered),
					Attempts: d.Delivery.Attempts, LastCode: d.Delivery.LastCode, LastStatus: d.Delivery.LastStatus,
					MaybeSent: d.Delivery.MaybeSent, Version: d.Delivery.Version,
				}
				if d.Delivery.State == delivery.Queued {
					v.NextAttemptAt = msTime(d.Delivery.NextAt)
				}
				out.Deliveries = append(out.Deliveries, v)
			}
			return s.emit(out, func(w io.Writer) {
				row(w, "TICKET", "TENANT", "REQUEST", "ENTERED", "AGE", "ATTEMPTS", "LAST", "NEXT", "VERSION")
				for _, d := range out.Deliveries {
					entered, _ := time.Parse(msLayout, d.EnteredAt)
					last := orDash(d.LastCode)
					if d.LastStatus != 0 {
						last += "/" + strconv.Itoa(d.LastStatus)
					}
					row(w, d.TicketID, d.Tenant, orDash(d.RequestID), d.EnteredAt, age(now.Sub(entered)),
						strconv.Itoa(d.Attempts), last, orDash(d.NextAttemptAt), strconv.FormatInt(d.Version, 10))
				}
				order := "oldest first"
				if delivery.State(*state) == delivery.Queued {
					order = "soonest next attempt first"
				}
				fmt.Fprintf(w, "(%d %s, %s", len(out.Deliveries), *state, order)
				if *tenant != "" {
					fmt.Fprintf(w, ", tenant %s", *tenant)
				}
				if *olderThan > 0 {
					fmt.Fprintf(w, ", in the state for at least %s", *olderThan)
				}
				if page.Stale > 0 {
					fmt.Fprintf(w, "; %d more left the state since the index listed them", page.Stale)
				}
				if page.Next != "" {
					fmt.Fprintf(w, "; more: add -after %s", page.Next)
				}
				fmt.Fprintln(w, ")")
				if *state == string(delivery.Queued) {
					fmt.Fprintln(w, "(queued lists every ticket waiting for an attempt, its first included)")
				}
			})
		},
	}
}

// age shows a duration to the second, or coarser when long.
func age(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Hour:
		return d.Truncate(time.Second).String()
	default:
		return d.Truncate(time.Minute).String()
	}
}

// settleAs maps -as to the store's decisions.
var settleAs = map[string]dynamo.SettleAs{
	"delivered":   dynamo.SettleDelivered,
	"not-created": dynamo.SettleNotCreated,
	"abandoned":   dynamo.SettleAbandoned,
}

// deliveryVersion is -version of delivery settle: the version find showed.
type deliveryVersion struct {
	set bool
	v   int64
}

func (f *deliveryVersion) String() string {
	if !f.set {
		return ""
	}
	return strconv.FormatInt(f.v, 10)
}

func (f *deliveryVersion) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 1 {
		return usageError("-version %q is not a delivery version (1 or more, as find shows it)", s)
	}
	f.set, f.v = true, v
	return nil
}

// longestDelivery is the horizon of a delivery under the largest settings
// a deployment accepts: a not-created decision queues the ticket again
// under a fresh budget, and its operation must outlive that delivery
// whatever DESTINATION_MAX_AGE and DESTINATION_TIMEOUT the worker has.
var longestDelivery = delivery.Policy{MaxAge: config.MaxDestMaxAge, Timeout: config.MaxDestTimeout}.Horizon()

// settleKeep is how long a decision keeps its operation at least.
func settleKeep(as dynamo.SettleAs, keep time.Duration) time.Duration {
	if as == dynamo.SettleNotCreated {
		return max(keep, longestDelivery)
	}
	return keep
}

func deliverySettle(fs *flag.FlagSet) action {
	id := fs.String("ticket", "", "the ticket id (required)")
	as := fs.String("as", "", "the decision (required): delivered (found in the helpdesk), not-created (not in the helpdesk: send it again, under the same key unless the destination replays errors per key) or abandoned (nothing more is attempted)")
	expect := fs.String("expect", "", "the state you saw (required): queued, failed, uncertain or abandoned; nothing is changed if the delivery is in another")
	var version deliveryVersion
	fs.Var(&version, "version", "settle only if the delivery is still at version `N`, as find showed it (required with -as not-created)")
	helpdeskID := fs.String("helpdesk-id", "", "with -as delivered (required): the ticket's id in the helpdesk")
	link := fs.String("url", "", "with -as delivered: where a person opens the ticket in the helpdesk")
	reason := fs.String("reason", "", fmt.Sprintf("why (required with -as abandoned; at most %d bytes): kept on the ticket and in its audit, never logged, never shown to the model", dynamo.MaxSettleReason))
	keep := fs.Duration("keep", idempotency.DefaultRetention, "keep the ticket's operation at least this long after the decision, so that the same call is answered with it (the stack's Retention); -as not-created keeps it for the longest delivery besides")
	return action{
		check: func() error {
			if err := checkTicketID(*id); err != nil {
				return err
			}
			decision, ok := settleAs[*as]
			if !ok {
				return usageError("-as must be delivered, not-created or abandoned")
			}
			switch st := delivery.State(*expect); st {
			case delivery.Queued, delivery.Failed, delivery.Uncertain, delivery.Abandoned:
			case "":
				return usageError("-expect is required: the state find showed (queued, failed, uncertain or abandoned); the decision is made only if the delivery is still in it")
			case delivery.Delivered:
				return usageError("-expect delivered: a delivered ticket is in the helpdesk and is not settled")
			case delivery.InProgress:
				return usageError("-expect in_progress: an attempt is running; wait until it ends (find shows until when) and settle the state it leaves")
			default:
				return usageError("-expect %q is not a delivery state: queued, failed, uncertain or abandoned", *expect)
			}
			if decision == dynamo.SettleAbandoned && *expect == string(delivery.Abandoned) {
				return usageError("the delivery is abandoned already: nothing to change")
			}
			if decision == dynamo.SettleNotCreated && !version.set {
				return usageError("-as not-created sends the ticket again: give -version N as find showed it, so that nothing is sent again if the delivery changed since you checked the helpdesk")
			}
			if decision == dynamo.SettleDelivered {
				if *helpdeskID == "" {
					return usageError("-as delivered needs -helpdesk-id: the ticket's id in the helpdesk, as you found it")
				}
				if err := checkText("-helpdesk-id", *helpdeskID, dynamo.MaxHelpdeskID); err != nil {
					return err
				}
				if err := checkURL(*link); err != nil {
					return err
				}
			} else if *helpdeskID != "" || *link != "" {
				return usageError("-helpdesk-id and -url go with -as delivered only")
			}
			if decision == dynamo.SettleAbandoned && *reason == "" {
				return usageError("-as abandoned needs -reason: why nothing more is attempted (kept in the audit)")
			}
			if *reason != "" {
				return checkText("-reason", *reason, dynamo.MaxSettleReason)
			}
			return nil
		},
		run: func(ctx context.Context, s *session) error {
			w, err := s.whoAmI(ctx)
			if err != nil {
				return err
			}
			st := dynamo.Settlement{
				TicketID: *id, As: settleAs[*as], Expect: delivery.State(*expect), Version: version.v,
				Receipt: delivery.Receipt{ID: *helpdeskID, URL: *link}, Reason: *reason, Actor: w,
				// At is left to the store's clock, which also judges the
				// not-created horizon: the operator's machine's never does.
				Keep: settleKeep(settleAs[*as], *keep),
			}
			rec, err := s.admin.Settle(ctx, st)
			var sc *dynamo.SettleConflictError
			switch {
			case errors.Is(err, dynamo.ErrNoTicket):
				return notFound("no ticket %s at %s; nothing written", *id, s.target)
			case errors.Is(err, dynamo.ErrNoDelivery):
				return conflict("ticket %s has no delivery: it was created without a destination, so there is nothing to settle. Nothing written", *id)
			case errors.As(err, &sc):
				return conflict("%s", settleRefusal(st, sc))
			case err != nil:
				return err
			}
			s.logSettle(w, st, rec)
			now := s.tool.now()
			dv := viewDelivery(&rec, now)
			if err := s.checkAudit(ctx, *id, &rec, dv); err != nil {
				return fmt.Errorf("settled, but its audit could not be checked: %w", err)
			}
			out := struct {
				Settled  bool          `json:"settled"`
				TicketID string        `json:"ticket_id"`
				As       string        `json:"as"`
				From     string        `json:"from"`
				To       string        `json:"to"`
				Delivery *deliveryView `json:"delivery"`
			}{true, *id, *as, *expect, string(rec.State), dv}
			return s.emit(out, func(tw io.Writer) {
				fmt.Fprintf(tw, "settled ticket %s as %s: %s -> %s (version %d), by %s\n", *id, *as, *expect, rec.State, rec.Version, actorLabel(w))
				if st.As == dynamo.SettleNotCreated {
					fmt.Fprintln(tw, "the worker sends it again at its next sweep (every minute on AWS, every DELIVERY_SWEEP_INTERVAL (1s) with make run): under the same key, or under a new key derived from it where the destination replays errors per key (DESTINATION_REPLAYS_ERRORS=true)")
				}
				deliveryRows(tw, dv)
			})
		},
	}
}

// checkURL refuses a -url that is not an absolute http(s) URL: it is
// given to the model as where the ticket is.
func checkURL(v string) error {
	if v == "" {
		return nil
	}
	if err := checkText("-url", v, dynamo.MaxHelpdeskURL); err != nil {
		return err
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(v, " \t") {
		return usageError("-url %q is not an http:// or https:// URL", v)
	}
	return nil
}

// settleRefusal says why a settlement was refused: what the delivery is
// now and who or what moved it there.
func settleRefusal(st dynamo.Settlement, c *dynamo.SettleConflictError) string {
	cur := c.Current
	again := fmt.Sprintf("Nothing written; look again (oncecall-admin find -ticket %s) and settle what you see", st.TicketID)
	switch {
	case cur.State == delivery.Delivered:
		ref := cur.Receipt.ID
		if cur.Receipt.URL != "" {
			ref += " " + cur.Receipt.URL
		}
		return fmt.Sprintf("ticket %s is delivered already (helpdesk %s; %s): there is nothing to settle. Nothing written", st.TicketID, ref, movedBy(cur))
	case cur.State != st.Expect:
		return fmt.Sprintf("ticket %s is %s now, not %s as -expect says (%s). %s", st.TicketID, cur.Reported(c.At), st.Expect, movedBy(cur), again)
	case st.Version != 0 && cur.Version != st.Version:
		return fmt.Sprintf("ticket %s is at version %d, not %d as -version says: it changed since you read it (%s). %s", st.TicketID, cur.Version, st.Version, movedBy(cur), again)
	case cur.LeaseOwner != "":
		until := msTime(cur.LeaseUntil)
		return fmt.Sprintf("an attempt is in progress until %s, try again after that (ticket %s: the delivery worker's attempt %d holds it, and only it or the sweep ends its lease). Nothing written", until, st.TicketID, cur.Attempts)
	case st.As == dynamo.SettleNotCreated && c.At.Before(cur.SafeAfter):
		return fmt.Sprintf("not-created is refused until %s by the store's clock (now %s): the last request that may have created ticket %s may still be running at the helpdesk, or its search may not show the ticket yet; look again then, and settle what you find. Nothing written",
			msTime(cur.SafeAfter), msTime(c.At), st.TicketID)
	}
	return fmt.Sprintf("ticket %s changed while this command ran (now %s at version %d; %s). %s", st.TicketID, cur.Reported(c.At), cur.Version, movedBy(cur), again)
}

// movedBy says who or what put the delivery r in its state: the last
// operator decision when it is the one that did, else the delivery worker
// (or, for an untried queued ticket, the callback that created it).
func movedBy(r delivery.Record) string {
	if n := len(r.Audit); n > 0 {
		last := r.Audit[n-1]
		if last.To == r.State && !r.Since.After(last.At) {
			s := fmt.Sprintf("%s by %s at %s", last.Action, strconv.Quote(last.Who), msTime(last.At))
			if r.Attempts > 0 {
				s += fmt.Sprintf("; %d attempt(s) since", r.Attempts)
			}
			return s
		}
	}
	if r.State == delivery.Queued && r.Attempts == 0 {
		return "queued by the callback at " + msTime(r.Since) + ", not attempted yet"
	}
	s := fmt.Sprintf("by the delivery worker at %s, after %d attempt(s)", msTime(r.Since), r.Attempts)
	if r.LastCode != "" {
		s += ", last outcome " + r.LastCode
	}
	return s
}

// DefaultStrandedAge is delivery recover's default -older-than: long
// enough that a ticket whose first attempt is only late (the stream
// retrying it) is not taken for stranded.
const DefaultStrandedAge = 15 * time.Minute

// deliveryRecover finds queued deliveries no sweep will take up and lists
// them for it.
func deliveryRecover(fs *flag.FlagSet) action {
	olderThan := fs.Duration("older-than", DefaultStrandedAge, "only deliveries queued for at least this long")
	dryRun := fs.Bool("dry-run", false, "list what is stranded; change nothing")
	return action{
		check: func() error {
			if *olderThan < time.Minute {
				return usageError("-older-than %s: at least 1m, or a first attempt still on its way would be taken for stranded", *olderThan)
			}
			return nil
		},
		run: func(ctx context.Context, s *session) error {
			var w delivery.Actor
			if !*dryRun {
				var err error
				if w, err = s.whoAmI(ctx); err != nil {
					return err
				}
			}
			now := s.tool.now()
			ids, err := s.admin.Stranded(ctx, now.Add(-*olderThan), now)
			if err != nil {
				return err
			}
			out := struct {
				DryRun      bool     `json:"dry_run"`
				Stranded    []string `json:"stranded"`
				Rescheduled []string `json:"rescheduled"`
				Moved       []string `json:"moved_meanwhile"`
			}{DryRun: *dryRun, Stranded: append([]string{}, ids...), Rescheduled: []string{}, Moved: []string{}}
			if !*dryRun {
				for _, id := range ids {
					err := s.admin.Reschedule(ctx, id, w, now)
					switch {
					case errors.Is(err, dynamo.ErrConflict):
						out.Moved = append(out.Moved, id)
						continue
					case err != nil:
						return err
					}
					out.Rescheduled = append(out.Rescheduled, id)
					s.writeLog(w, changeLog{Action: "delivery." + dynamo.ActionRecover, TicketID: id, Field: "delivery",
						Before: "queued, stranded", After: "queued, due now"})
				}
			}
			return s.emit(out, func(tw io.Writer) {
				fmt.Fprintf(tw, "%d deliveries queued for at least %s with no attempt scheduled and no live lease (a scan of table %s)\n", len(ids), *olderThan, s.target.table)
				for _, id := range ids {
					fmt.Fprintln(tw, "  "+id)
				}
				switch {
				case *dryRun:
					fmt.Fprintln(tw, "dry run: nothing changed; run again without -dry-run to list them for the sweep")
				default:
					fmt.Fprintf(tw, "%d listed for the sweep, due now (it attempts them within a minute on AWS); %d moved meanwhile and were left alone\n", len(out.Rescheduled), len(out.Moved))
				}
			})
		},
	}
}
