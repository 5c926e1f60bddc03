package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/nonce"
)

// commands are every command of the tool, in the order the usage lists
// them within their group.
var commands = []*command{
	{
		name: "user list", summary: "list a tenant's users in id order, a page at a time (queries the lookup index; never scans)",
		synopsis: "-tenant T [-limit N] [-after ID] [target flags] [-json]",
		example:  "user list -tenant tenant-a\nuser list -tenant tenant-a -limit 2 -after user-b -json",
		store:    true, bind: userList,
	},
	{
		name: "user get", summary: "show one user, with the version a change can be made conditional on",
		synopsis: "-id ID [target flags] [-json]",
		example:  "user get -id user-e",
		store:    true, bind: userGet,
	},
	{
		name: "user add", summary: "create a user; refuses an id that exists (nothing is replaced)",
		synopsis: "-id ID -tenant T -functions F[,F] [-name N] [-disabled] [target flags] [-operator NAME] [-json]",
		example:  "user add -id user-f -tenant tenant-c -name frank -functions " + strings.Join(toolNames(), ",") + " -operator alice",
		store:    true, change: true, bind: userAdd,
	},
	{
		name: "user grant", summary: "let a user call one more function; nothing else changes",
		synopsis: "-id ID -function F [-version N] [target flags] [-operator NAME] [-json]",
		example:  "user grant -id user-e -function " + toolNames()[0] + " -operator alice",
		store:    true, change: true, bind: userGrant,
	},
	{
		name: "user revoke", summary: "take one function from a user (never the last: disable the user instead); returns at once, and no call that reads the record from then on may use it",
		synopsis: "-id ID -function F [-version N] [-no-wait] [target flags] [-operator NAME] [-json]",
		example:  "user revoke -id user-a -function " + toolNames()[0] + " -operator alice",
		store:    true, change: true, bind: userRevoke,
	},
	{
		name: "user disable", summary: "refuse every call of a user; functions and name are kept; returns at once, and every call that reads the record from then on is refused",
		synopsis: "-id ID [-version N] [-no-wait] [target flags] [-operator NAME] [-json]",
		example:  "user disable -id user-f -operator alice\nuser disable -id user-f -version 3 -operator alice",
		store:    true, change: true, bind: userSetActive(false),
	},
	{
		name: "user enable", summary: "let a disabled user call their functions again (the same ones as before)",
		synopsis: "-id ID [-version N] [target flags] [-operator NAME] [-json]",
		example:  "user enable -id user-d -operator alice",
		store:    true, change: true, bind: userSetActive(true),
	},
	{
		name: "user rename", summary: "change a user's display name only",
		synopsis: "-id ID -name N [-version N] [target flags] [-operator NAME] [-json]",
		example:  "user rename -id user-f -name 'Frank Smith' -operator alice",
		store:    true, change: true, bind: userRename,
	},
	{
		name: "user delete", summary: "delete a user: every call is refused as unknown; returns at once",
		synopsis: "-id ID [-version N] [-no-wait] [target flags] [-operator NAME] [-json]",
		example:  "user delete -id user-f -operator alice\nuser delete -id user-f -version 4 -no-wait -json -operator alice",
		store:    true, change: true, bind: userDelete,
	},
	{
		name: "find", summary: "an operation, its ticket and the ticket's delivery with its audit, by ticket id, operation key, or tenant + request id",
		synopsis: "(-ticket ID | -op KEY | -tenant T -request R [-function F]) [-full] [target flags] [-json]",
		example:  "find -tenant tenant-a -request request-example\nfind -ticket 5b0c4f2e-8d1a-4c3b-9e7f-0a1b2c3d4e5f -full\nfind -op 3f1c0e8a9b7d6c5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e -json",
		store:    true, audit: true, bind: findCmd,
	},
	{
		name: "delivery list", summary: "list the tickets whose delivery is uncertain, failed or waiting for an attempt (queued), oldest first, a page at a time (queries the attention index; never scans)",
		synopsis: "-state uncertain|failed|queued [-older-than D] [-tenant T] [-limit N] [-after CURSOR] [target flags] [-json]",
		example:  "delivery list -state uncertain\ndelivery list -state queued -older-than 1h -tenant tenant-a -limit 20 -json",
		store:    true, bind: deliveryList,
	},
	{
		name: "delivery settle", summary: "record a person's decision on a delivery, conditional on the state (and version) seen: delivered, not-created (send again, same key) or abandoned",
		synopsis: "-ticket ID -as delivered|not-created|abandoned -expect STATE [-version N] [-helpdesk-id X [-url U]] [-reason R] [target flags] [-operator NAME] [-json]",
		example: "delivery settle -ticket 5b0c4f2e-8d1a-4c3b-9e7f-0a1b2c3d4e5f -as delivered -expect uncertain -version 3 -helpdesk-id 4711 -url https://example.zendesk.com/agent/tickets/4711 -operator alice\n" +
			"delivery settle -ticket 5b0c4f2e-8d1a-4c3b-9e7f-0a1b2c3d4e5f -as not-created -expect uncertain -version 3 -reason 'not in the helpdesk by external id or key' -operator alice\n" +
			"delivery settle -ticket 5b0c4f2e-8d1a-4c3b-9e7f-0a1b2c3d4e5f -as abandoned -expect failed -reason 'customer withdrew the request' -operator alice",
		store: true, change: true, audit: true, bind: deliverySettle,
	},
	{
		name: "delivery recover", summary: "find queued deliveries no sweep will take up (a first attempt the stream path gave up on) and list them for the sweep; scans the table, for when the on-failure queue or the iterator-age alarm fired",
		synopsis: "[-older-than 15m] [-dry-run] [target flags] [-operator NAME] [-json]",
		example:  "delivery recover -dry-run -operator alice\ndelivery recover -older-than 1h -operator alice",
		store:    true, change: true, audit: true, bind: deliveryRecover,
	},
	{
		name: "table create", summary: "create the table with its indexes and TTL, or add the indexes an existing table lacks",
		synopsis: "[target flags] [-operator NAME] [-json]",
		example:  "table create\ntable create -aws -table oncecall-Table-ABC123 -region eu-west-1",
		store:    true, change: true, anyone: true, bind: tableCreate,
	},
	{
		name: "table remove-grant-copies", summary: "delete the copies of users' grants that versions before this one kept beside each user (no call reads them); scans the table",
		synopsis: "[target flags] [-operator NAME] [-json]",
		example:  "table remove-grant-copies\ntable remove-grant-copies -aws -table oncecall-Table-ABC123 -region eu-west-1",
		store:    true, change: true, anyone: true, bind: tableRemoveGrantCopies,
	},
	{
		name: "nonce", summary: "print a fresh X-Request-Nonce: a BCrypt hash of the hook key",
		synopsis: "[-key K] [-cost 9] [-json]",
		example:  "nonce\nnonce -key \"$HOOK_KEY\" -cost 9",
		bind:     nonceCmd,
	},
}

func tableCreate(*flag.FlagSet) action {
	return action{run: func(ctx context.Context, s *session) error {
		w, err := s.whoAmI(ctx)
		if err != nil {
			return err
		}
		res, err := dynamo.EnsureTable(ctx, s.tables, s.target.table)
		if err != nil {
			return err
		}
		out := struct {
			Table        string   `json:"table"`
			Created      bool     `json:"created"`
			IndexesAdded []string `json:"indexes_added"`
			TTL          string   `json:"ttl"`
		}{s.target.table, res.Created, res.IndexesAdded, string(res.TTL)}
		if out.IndexesAdded == nil {
			out.IndexesAdded = []string{}
		}
		if res.Created || len(res.IndexesAdded) > 0 {
			s.logChange(w, "table.create", "", "", nil, out, 0)
		}
		return s.emit(out, func(tw io.Writer) {
			row(tw, "table", s.target.String())
			row(tw, "created", fmt.Sprint(res.Created))
			row(tw, "indexes added", list(res.IndexesAdded))
			ttl := string(res.TTL)
			if res.TTL == dynamo.TTLNotEnabled {
				ttl += " (this store does not implement TTL; oncecall enforces expiry itself)"
			}
			row(tw, "ttl", ttl)
		})
	}}
}

func nonceCmd(fs *flag.FlagSet) action {
	key := fs.String("key", "", "hook key (default $HOOK_KEY, else the local demo key)")
	cost := fs.Int("cost", 9, "BCrypt cost; AIVAX uses 9")
	return action{
		check: func() error {
			if *cost < nonce.MinCost || *cost > nonce.HardMaxCost {
				return usageError("-cost must be from %d to %d", nonce.MinCost, nonce.HardMaxCost)
			}
			if len(*key) > nonce.MaxKeyBytes {
				return usageError("the hook key is longer than %d bytes", nonce.MaxKeyBytes)
			}
			// -key "$KEY" with KEY never set must not print a nonce of
			// another key ($HOOK_KEY's, or the public demo key's).
			given := false
			fs.Visit(func(f *flag.Flag) { given = given || f.Name == "key" })
			if given && strings.TrimSpace(*key) == "" {
				return usageError("-key is empty: give the hook key (is the variable you passed set?), or leave -key out for $%s or the local demo key", config.EnvHookKey)
			}
			return nil
		},
		run: func(_ context.Context, s *session) error {
			k := *key
			if k == "" {
				k = s.tool.getenv(config.EnvHookKey)
			}
			if k == "" {
				k = nonce.DemoKey
			}
			if len(k) > nonce.MaxKeyBytes {
				return usageError("%s is longer than %d bytes", config.EnvHookKey, nonce.MaxKeyBytes)
			}
			h, err := nonce.Generate(k, *cost)
			if err != nil {
				return err
			}
			if s.json {
				return s.emit(struct {
					Nonce string `json:"nonce"`
				}{h}, nil)
			}
			fmt.Fprintln(s.out, h)
			return nil
		},
	}
}

// changeLog is the one JSON line a change writes on standard error. Its
// field names are stable; it never holds a secret (user records hold none)
// nor an operator's reason for a settlement (it may quote the ticket).
type changeLog struct {
	Time   string `json:"time"`
	Msg    string `json:"msg"`
	Action string `json:"action"`
	// Who made it: the AWS ARN, or the -operator name off AWS; Via says
	// which.
	Who      string `json:"who"`
	Via      string `json:"via"`
	Verified bool   `json:"verified"`
	// SourceIdentity is the AWS session's sts:SourceIdentity, when known;
	// Operator an -operator name given on AWS, a label only.
	SourceIdentity string `json:"source_identity,omitempty"`
	Operator       string `json:"operator,omitempty"`
	Target         string `json:"target"`
	Table          string `json:"table"`
	UserID         string `json:"user_id,omitempty"`
	TicketID       string `json:"ticket_id,omitempty"`
	Field          string `json:"field,omitempty"`
	Before         any    `json:"before"`
	After          any    `json:"after"`
	Version        int64  `json:"version,omitempty"`
	// HelpdeskID is the helpdesk's id a settlement recorded.
	HelpdeskID string `json:"helpdesk_id,omitempty"`
}

// logChange writes the change's line. It runs after the write succeeded.
func (s *session) logChange(w delivery.Actor, action, userID, field string, before, after any, version int64) {
	s.writeLog(w, changeLog{Action: action, UserID: userID, Field: field, Before: before, After: after, Version: version})
}

// logSettle writes a settlement's line: the ticket, the delivery state
// before and after, the new version and any helpdesk id recorded. The
// operator's reason is not logged: it may quote the ticket.
func (s *session) logSettle(w delivery.Actor, st dynamo.Settlement, r delivery.Record) {
	s.writeLog(w, changeLog{
		Action: "delivery." + st.As.Action(), TicketID: st.TicketID, Field: "delivery",
		Before: string(st.Expect), After: string(r.State), Version: r.Version, HelpdeskID: st.Receipt.ID,
	})
}

// writeLog completes c with the time, who and the target, and writes it.
func (s *session) writeLog(w delivery.Actor, c changeLog) {
	c.Time, c.Msg = s.tool.now().UTC().Format(time.RFC3339Nano), "oncecall-admin change"
	c.Who, c.Via, c.Verified, c.SourceIdentity, c.Operator = w.Who, w.Via, w.Verified, w.SourceIdentity, w.Operator
	c.Target, c.Table = s.target.label(), s.target.table
	b, err := json.Marshal(c)
	if err != nil {
		// Only values of the types above are logged; this cannot happen.
		b = []byte(`{"msg":"oncecall-admin change","action":` + fmt.Sprintf("%q", c.Action) + `,"error":"unencodable"}`)
	}
	fmt.Fprintln(s.tool.stderr, strings.TrimSpace(string(b)))
}
