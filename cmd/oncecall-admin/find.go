package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/outcome"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/ticket"
)

// ticketView is a ticket as find prints it; field names are stable.
type ticketView struct {
	ID           string   `json:"id"`
	Tenant       string   `json:"tenant"`
	UserID       string   `json:"user_id"`
	RequestID    string   `json:"request_id"`
	OperationKey string   `json:"operation_key"`
	Title        string   `json:"title"`
	Priority     string   `json:"priority"`
	Tags         []string `json:"tags"`
	CreatedAt    string   `json:"created_at"`
	// DescriptionChars is the description's length in characters; the
	// text itself only with -full.
	DescriptionChars int    `json:"description_chars"`
	Description      string `json:"description,omitempty"`
}

// operationView is an operation as find prints it.
type operationView struct {
	Key       string `json:"key"`
	State     string `json:"state"`
	Function  string `json:"function"`
	UserID    string `json:"user_id"`
	Tenant    string `json:"tenant"`
	TicketID  string `json:"ticket_id,omitempty"`
	CreatedAt string `json:"created_at"`
	ExpiresAt string `json:"expires_at,omitempty"`
	// Live: a repeat of the call is still answered from this record.
	Live bool `json:"live"`
	// Result is the answer stored for repeats, with -full.
	Result json.RawMessage `json:"result,omitempty"`
}

// matchView is one operation and its ticket. Either may be null: an
// operation item is deleted after its window while its ticket stays.
type matchView struct {
	Ticket    *ticketView    `json:"ticket"`
	Operation *operationView `json:"operation"`
	// Delivery is the ticket's delivery, with its audit; null for a
	// ticket created without a destination, or no ticket.
	Delivery *deliveryView `json:"delivery"`
}

const timeLayout = time.RFC3339

func viewTicket(t *ticket.Ticket, full bool) *ticketView {
	if t == nil {
		return nil
	}
	v := &ticketView{
		ID: t.ID, Tenant: t.Tenant, UserID: t.UserID, RequestID: t.RequestID, OperationKey: t.OperationKey,
		Title: t.Title, Priority: t.Priority, Tags: t.Tags, DescriptionChars: utf8.RuneCountInString(t.Description),
	}
	if v.Tags == nil {
		v.Tags = []string{}
	}
	if !t.CreatedAt.IsZero() {
		v.CreatedAt = t.CreatedAt.UTC().Format(time.RFC3339Nano)
	}
	if full {
		v.Description = t.Description
	}
	return v
}

func viewOperation(r *idempotency.Record, now time.Time, full bool) *operationView {
	if r == nil {
		return nil
	}
	v := &operationView{
		Key: r.Key, State: string(r.State), Function: r.Function, UserID: r.UserID, Tenant: r.Tenant,
		TicketID: r.TicketID, CreatedAt: r.CreatedAt.UTC().Format(timeLayout), Live: r.Live(now),
	}
	if !r.ExpiresAt.IsZero() {
		v.ExpiresAt = r.ExpiresAt.UTC().Format(timeLayout)
	}
	if full && json.Valid(r.Result) {
		v.Result = r.Result
	}
	return v
}

func findCmd(fs *flag.FlagSet) action {
	ticketID := fs.String("ticket", "", "a ticket id")
	key := fs.String("op", "", "an operation key (op_key in the server's log)")
	tenant := fs.String("tenant", "", "with -request: the tenant (from the user's record)")
	requestID := fs.String("request", "", "with -tenant: the request id (metadata.request_id)")
	function := fs.String("function", "", "with -tenant and -request: only operations of this function")
	full := fs.Bool("full", false, "also print the ticket's description and the stored result")
	user := fs.String("user", "", "with -request: the user's external id; prints what the application's outcome read (GET /outcome) answers")
	return action{
		check: func() error {
			if *user != "" {
				if *ticketID != "" || *key != "" || *tenant != "" || *function != "" || *full || *requestID == "" {
					return usageError("-user U -request R stands alone: it prints what GET /outcome answers for them")
				}
				if err := checkText("-user", *user, protocol.MaxUserIDBytes); err != nil {
					return err
				}
				return checkRequestID(*requestID)
			}
			handles := 0
			for _, set := range []bool{*ticketID != "", *key != "", *tenant != "" || *requestID != ""} {
				if set {
					handles++
				}
			}
			if handles != 1 {
				return usageError("give one handle: -ticket ID, -op KEY, or -tenant T -request R")
			}
			if *function != "" && *requestID == "" {
				return usageError("-function narrows -tenant T -request R only")
			}
			if *ticketID == "" && *key == "" && (*tenant == "" || *requestID == "") {
				return usageError("-tenant and -request go together: an operation is found by its tenant and request id")
			}
			switch {
			case *ticketID != "":
				return checkTicketID(*ticketID)
			case *key != "":
				return checkOpKey(*key)
			}
			if err := checkTenant(*tenant); err != nil {
				return err
			}
			if *function != "" {
				if err := checkFunction("-function", *function); err != nil {
					return err
				}
			}
			return checkRequestID(*requestID)
		},
		run: func(ctx context.Context, s *session) error {
			if *user != "" {
				return s.emitOutcome(ctx, *user, *requestID)
			}
			var m dynamo.Matches
			var what string
			switch {
			case *ticketID != "":
				f, err := s.admin.FindTicket(ctx, *ticketID)
				if err != nil {
					return err
				}
				if f == nil {
					return notFound("no ticket %s at %s", *ticketID, s.target)
				}
				m.Found, what = []dynamo.Found{*f}, "ticket "+*ticketID
			case *key != "":
				f, err := s.admin.FindOperation(ctx, *key)
				if err != nil {
					return err
				}
				if f == nil {
					return notFound("no operation %s at %s (none was claimed, or it was deleted after its window: find -tenant T -request R still finds its ticket)", *key, s.target)
				}
				m.Found, what = []dynamo.Found{*f}, "operation "+*key
			default:
				var err error
				if m, err = s.admin.FindRequest(ctx, *tenant, *requestID, *function); err != nil {
					return err
				}
				if len(m.Found) == 0 {
					return notFound("no ticket for request %s of tenant %s at %s (a ticket created in the last second may not be indexed yet)", *requestID, *tenant, s.target)
				}
				what = fmt.Sprintf("request %s of tenant %s", *requestID, *tenant)
			}
			return s.emitMatches(ctx, m, what, *full)
		},
	}
}

// emitOutcome prints what the application's outcome read answers for
// user and requestID: the same function (outcome.Reader.Read) and the same
// view as GET /outcome, with the delivery whenever the ticket has one.
func (s *session) emitOutcome(ctx context.Context, user, requestID string) error {
	v, err := s.admin.Outcome(ctx, user, requestID)
	if err != nil {
		return err
	}
	return s.emit(v, func(w io.Writer) {
		row(w, "status", v.Status)
		row(w, "request_id", v.RequestID)
		if v.Status != outcome.StatusFound {
			row(w, "", "nothing was written under this id for this user")
			return
		}
		row(w, "function", v.Function)
		row(w, "ticket", orDash(v.TicketID))
		row(w, "created_at", v.CreatedAt)
		if v.Delivery != nil {
			row(w, "delivery", string(v.Delivery.State))
		}
	})
}

func (s *session) emitMatches(ctx context.Context, m dynamo.Matches, what string, full bool) error {
	now := s.tool.now()
	out := struct {
		Matches   []matchView `json:"matches"`
		Truncated bool        `json:"truncated"`
	}{Matches: make([]matchView, 0, len(m.Found)), Truncated: m.Truncated}
	for _, f := range m.Found {
		mv := matchView{Ticket: viewTicket(f.Ticket, full), Operation: viewOperation(f.Operation, now, full), Delivery: viewDelivery(f.Delivery, now)}
		if f.Ticket != nil {
			if err := s.checkAudit(ctx, f.Ticket.ID, f.Delivery, mv.Delivery); err != nil {
				return err
			}
		}
		out.Matches = append(out.Matches, mv)
	}
	return s.emit(out, func(w io.Writer) {
		fmt.Fprintf(w, "%s: %d found, oldest first\n", what, len(out.Matches))
		for i, mv := range out.Matches {
			if i > 0 {
				fmt.Fprintln(w)
			}
			matchRows(w, mv, full)
		}
		if m.Truncated {
			fmt.Fprintf(w, "(only the oldest %d shown)\n", dynamo.MaxRequestMatches)
		}
	})
}

func matchRows(w io.Writer, m matchView, full bool) {
	if t := m.Ticket; t != nil {
		row(w, "ticket", t.ID)
		row(w, "  tenant", t.Tenant)
		row(w, "  user", orDash(t.UserID))
		row(w, "  request_id", orDash(t.RequestID))
		row(w, "  title", quoted(t.Title))
		row(w, "  priority", orDash(t.Priority))
		row(w, "  tags", list(t.Tags))
		row(w, "  created_at", orDash(t.CreatedAt))
		switch {
		case full:
			row(w, "  description", quoted(t.Description))
		case t.DescriptionChars > 0:
			row(w, "  description", fmt.Sprintf("(%d characters; -full shows it)", t.DescriptionChars))
		default:
			row(w, "  description", "-")
		}
	} else {
		row(w, "ticket", "- (none: the operation made no ticket, or it was deleted)")
	}
	if o := m.Operation; o != nil {
		row(w, "operation", o.Key)
		row(w, "  state", o.State)
		row(w, "  function", o.Function)
		row(w, "  user", o.UserID)
		row(w, "  created_at", o.CreatedAt)
		switch {
		case o.ExpiresAt == "":
			row(w, "  expires_at", "never")
		case o.Live:
			row(w, "  expires_at", o.ExpiresAt+" (live: a repeat is answered from this record until then)")
		default:
			row(w, "  expires_at", o.ExpiresAt+" (expired: a repeat makes a new operation)")
		}
		if full && len(o.Result) > 0 {
			row(w, "  result", string(o.Result))
		}
	} else {
		row(w, "operation", "- (none: deleted after its deduplication window)")
	}
	if m.Ticket != nil {
		deliveryRows(w, m.Delivery)
	}
}
