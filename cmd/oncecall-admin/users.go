package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/identity"
)

// Bounds of user list.
const defaultListLimit = 100

// userView is a user as -json prints it. Its field names are stable.
type userView struct {
	ID        string   `json:"id"`
	Tenant    string   `json:"tenant"`
	Name      string   `json:"name"`
	Active    bool     `json:"active"`
	Functions []string `json:"functions"`
	Version   int64    `json:"version"`
	// Deleted: the record shown is the one user delete removed.
	Deleted bool `json:"deleted,omitempty"`
}

func viewUser(r dynamo.UserRecord) userView {
	fns := slices.Sorted(slices.Values(r.Functions))
	if fns == nil {
		fns = []string{}
	}
	return userView{ID: r.ExternalID, Tenant: r.Tenant, Name: r.Name, Active: r.Active, Functions: fns, Version: r.Version}
}

func state(active bool) string {
	if active {
		return "active"
	}
	return "disabled"
}

// userRows writes a user as a two-column table.
func userRows(w io.Writer, u userView) {
	row(w, "id", u.ID)
	row(w, "tenant", u.Tenant)
	row(w, "name", orDash(u.Name))
	if u.Deleted {
		row(w, "state", "deleted (was "+state(u.Active)+")")
	} else {
		row(w, "state", state(u.Active))
	}
	row(w, "functions", list(u.Functions))
	row(w, "version", strconv.FormatInt(u.Version, 10))
}

func userList(fs *flag.FlagSet) action {
	tenant := fs.String("tenant", "", "the tenant whose users to list (required)")
	limit := fs.Int("limit", defaultListLimit, fmt.Sprintf("at most this many users (1 to %d)", dynamo.MaxListUsers))
	after := fs.String("after", "", "list the users whose ids sort after this one (the next page: the id the last page ended with)")
	return action{
		check: func() error {
			if err := checkTenant(*tenant); err != nil {
				return err
			}
			if *limit < 1 || *limit > dynamo.MaxListUsers {
				return usageError("-limit %d is outside 1 to %d", *limit, dynamo.MaxListUsers)
			}
			return nil
		},
		run: func(ctx context.Context, s *session) error {
			page, err := s.admin.Users(ctx, *tenant, *after, *limit)
			if err != nil {
				return err
			}
			out := struct {
				Tenant string     `json:"tenant"`
				Users  []userView `json:"users"`
				// Next is the -after of the next page; empty on the last.
				Next string `json:"next"`
			}{Tenant: *tenant, Users: []userView{}, Next: page.Next}
			for _, u := range page.Users {
				out.Users = append(out.Users, viewUser(u))
			}
			return s.emit(out, func(w io.Writer) {
				row(w, "ID", "NAME", "STATE", "FUNCTIONS", "VERSION")
				for _, u := range out.Users {
					row(w, u.ID, orDash(u.Name), state(u.Active), list(u.Functions), strconv.FormatInt(u.Version, 10))
				}
				fmt.Fprintf(w, "(%d users of tenant %s", len(out.Users), *tenant)
				if page.Next != "" {
					fmt.Fprintf(w, "; more: user list -tenant %s -after %s", *tenant, page.Next)
				}
				fmt.Fprintln(w, ")")
			})
		},
	}
}

func userGet(fs *flag.FlagSet) action {
	id := fs.String("id", "", "the user's id, the externalUserId AIVAX sends (required)")
	return action{
		check: func() error { return checkUserID(*id) },
		run: func(ctx context.Context, s *session) error {
			r, err := s.readUser(ctx, *id)
			if err != nil {
				return err
			}
			v := viewUser(r)
			return s.emit(v, func(w io.Writer) { userRows(w, v) })
		},
	}
}

func userAdd(fs *flag.FlagSet) action {
	id := fs.String("id", "", "the user's id, the externalUserId AIVAX sends (required)")
	tenant := fs.String("tenant", "", "the user's tenant (required; never changes)")
	name := fs.String("name", "", "display name")
	functions := fs.String("functions", "", "functions the user may call, comma-separated (required): "+functionNames())
	disabled := fs.Bool("disabled", false, "create the user disabled")
	var fns []string
	return action{
		check: func() error {
			for _, err := range []error{checkUserID(*id), checkTenant(*tenant), checkName(*name)} {
				if err != nil {
					return err
				}
			}
			var err error
			fns, err = parseFunctions(*functions)
			return err
		},
		run: func(ctx context.Context, s *session) error {
			w, err := s.whoAmI(ctx)
			if err != nil {
				return err
			}
			u := identity.User{ExternalID: *id, Tenant: *tenant, Name: *name, Active: !*disabled, Functions: fns}
			r, err := s.admin.AddUser(ctx, u)
			if errors.Is(err, dynamo.ErrUserExists) {
				if r.ExternalID == "" || !sameUser(r.User, u) {
					return conflict("user %s already exists at %s: nothing written. user add only creates; change one field with user grant, revoke, disable, enable or rename", *id, s.target)
				}
				// Exactly as asked (an add run again): nothing to do.
				v := viewUser(r)
				return s.emit(changed{Changed: false, User: v}, func(tw io.Writer) {
					fmt.Fprintf(tw, "user %s already exists at %s exactly as asked; nothing changed\n", *id, s.target)
					userRows(tw, v)
				})
			}
			if err != nil {
				return err
			}
			v := viewUser(r)
			s.logChange(w, "user.add", *id, "", nil, v, r.Version)
			return s.emit(changed{Changed: true, User: v}, func(tw io.Writer) {
				fmt.Fprintf(tw, "added user %s to %s\n", *id, s.target)
				userRows(tw, v)
			})
		},
	}
}

// sameUser reports whether a and b are the same user, field for field
// (functions as a set).
func sameUser(a, b identity.User) bool {
	return a.ExternalID == b.ExternalID && a.Tenant == b.Tenant && a.Name == b.Name && a.Active == b.Active &&
		slices.Equal(slices.Sorted(slices.Values(a.Functions)), slices.Sorted(slices.Values(b.Functions)))
}

// changed is what a user change prints with -json.
type changed struct {
	// Changed is false when the record already was as asked.
	Changed bool     `json:"changed"`
	User    userView `json:"user"`
	// WaitedSeconds, for a change that takes access away, is how long the
	// command waited before it returned (revocationWait, 0 with -no-wait).
	WaitedSeconds *float64 `json:"waited_seconds,omitempty"`
}

// userEdit changes one field of u, the record as read. It returns the
// field's name and its value before and after, and an error to refuse the
// change.
type userEdit func(u *identity.User) (field string, before, after any, err error)

// userChange declares -id and -version (and, for a change that takes
// access away, -no-wait), and runs edit on the record read, writing it
// back conditional on that read.
func userChange(fs *flag.FlagSet, verb string, takes bool, edit func(id string) userEdit, check func() error) action {
	id := fs.String("id", "", "the user's id (required)")
	var version versionFlag
	fs.Var(&version, "version", "change only if the record is still at version `N` (as user get showed it)")
	noWait := declareNoWait(fs, takes)
	return action{
		check: func() error {
			if err := checkUserID(*id); err != nil {
				return err
			}
			if check != nil {
				return check()
			}
			return nil
		},
		run: func(ctx context.Context, s *session) error {
			return s.changeUser(ctx, *id, version, verb, edit(*id), takes, !*noWait)
		},
	}
}

// declareNoWait declares -no-wait on a command that takes access away
// (takes) and returns it; false for any other.
func declareNoWait(fs *flag.FlagSet, takes bool) *bool {
	if !takes {
		return new(bool)
	}
	return fs.Bool("no-wait", false, fmt.Sprintf("return as soon as the change is written, without waiting %s for the calls that read the user's earlier record to end (scripts that accept that window)", revocationWait))
}

// revocationWait is how long a change that takes access away waits before
// it returns (callback.RevocationWait).
const revocationWait = callback.RevocationWait

// waitRevoked waits until no call of user id that read its record before
// the change can still create a ticket or show a stored result, saying
// on standard error what it waits for and how long; with wait false it
// says what it did not wait for. It returns the seconds waited, for -json.
func (s *session) waitRevoked(ctx context.Context, id string, wait bool) (*float64, error) {
	waited := 0.0
	if !wait {
		fmt.Fprintf(s.tool.stderr, "oncecall-admin: not waiting (-no-wait): for up to %s a call of %s that read its earlier record may still create a ticket or show a stored result\n", revocationWait, id)
		return &waited, nil
	}
	fmt.Fprintf(s.tool.stderr, "oncecall-admin: waiting %s: a call of %s that read its earlier record may still create a ticket or show a stored result until its deadline (%s), and a write it sent may still land up to %s after that (-no-wait returns at once)\n",
		revocationWait, id, callback.Deadline, callback.LateWriteMargin)
	// Ctrl-C during the wait ends it with the message below rather than
	// ending the tool without a word.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := s.tool.wait(ctx, revocationWait); err != nil {
		return nil, fmt.Errorf("the change is written, but the wait for the calls that read the earlier record was cut short (%w): run the same command again, which waits again", err)
	}
	waited = revocationWait.Seconds()
	return &waited, nil
}

// afterWait is the line a change that takes access away prints once it
// returns.
func afterWait(w io.Writer, id string, waited *float64) {
	if waited == nil {
		return
	}
	if *waited == 0 {
		fmt.Fprintf(w, "%s: not waited (-no-wait): calls that read the earlier record may still create a ticket or show a stored result for up to %s\n", id, revocationWait)
		return
	}
	fmt.Fprintf(w, "%s: no call that read the earlier record can create a ticket or show a stored result any more (waited %s)\n", id, time.Duration(*waited*float64(time.Second)))
}

func (s *session) readUser(ctx context.Context, id string) (dynamo.UserRecord, error) {
	r, err := s.admin.User(ctx, id)
	if errors.Is(err, identity.ErrUnknown) {
		return r, notFound("no user %s at %s", id, s.target)
	}
	return r, err
}

// changeUser makes one change to user id. When the change takes access
// away (takes), once the record says what was asked, written now or found
// so (an earlier run of the same command may have been cut short before
// its wait), the command waits revocationWait before it returns, unless
// not to wait.
func (s *session) changeUser(ctx context.Context, id string, version versionFlag, verb string, edit userEdit, takes, wait bool) error {
	w, err := s.whoAmI(ctx)
	if err != nil {
		return err
	}
	read, err := s.readUser(ctx, id)
	if err != nil {
		return err
	}
	if version.set && read.Version != version.v {
		return conflict("user %s is at version %d, not %d as -version says: it changed since you read it. Nothing written; read it again (user get -id %s) and repeat the change if it still applies", id, read.Version, version.v, id)
	}
	to := read.User
	to.Functions = slices.Clone(read.Functions)
	field, before, after, err := edit(&to)
	if err != nil {
		return err
	}
	next, err := s.admin.UpdateUser(ctx, read, to)
	var ce *dynamo.ConflictError
	switch {
	case errors.As(err, &ce):
		now := "another"
		if ce.Current != nil {
			now = strconv.FormatInt(ce.Current.Version, 10)
		}
		return conflict("user %s changed while this command ran (read at version %d, now %s). Nothing written; read it again (user get -id %s) and repeat the change if it still applies", id, read.Version, now, id)
	case errors.Is(err, identity.ErrUnknown):
		return notFound("user %s was deleted while this command ran; nothing written", id)
	case err != nil:
		return err
	}
	did := next.Version != read.Version
	if did {
		s.logChange(w, "user."+verb, id, field, before, after, next.Version)
	}
	var waited *float64
	if takes {
		if waited, err = s.waitRevoked(ctx, id, wait); err != nil {
			return err
		}
	}
	v := viewUser(next)
	label := printedField(field)
	return s.emit(changed{Changed: did, User: v, WaitedSeconds: waited}, func(tw io.Writer) {
		if did {
			fmt.Fprintf(tw, "%s: %s %v -> %v (version %d -> %d)\n", id, label, show(before), show(after), read.Version, next.Version)
		} else {
			fmt.Fprintf(tw, "%s: %s already %v; nothing changed\n", id, label, show(after))
		}
		afterWait(tw, id, waited)
		userRows(tw, v)
	})
}

// printedField is how the printed line of a change names field: the
// active flag is shown as the user's state (active or disabled), as the
// table's "state" row shows it, so that the line does not read "active
// active -> disabled". The change log keeps the field's own name.
func printedField(field string) string {
	if field == "active" {
		return "state"
	}
	return field
}

func show(v any) string {
	switch x := v.(type) {
	case []string:
		return list(x)
	case string:
		return strconv.Quote(x)
	case bool:
		return state(x)
	}
	return fmt.Sprint(v)
}

func userGrant(fs *flag.FlagSet) action {
	fn := fs.String("function", "", "the function to grant (required): "+functionNames())
	return userChange(fs, "grant", false, func(string) userEdit {
		return func(u *identity.User) (string, any, any, error) {
			before := slices.Sorted(slices.Values(u.Functions))
			if !slices.Contains(u.Functions, *fn) {
				u.Functions = append(u.Functions, *fn)
			}
			return "functions", before, slices.Sorted(slices.Values(u.Functions)), nil
		}
	}, func() error { return checkFunction("-function", *fn) })
}

func userRevoke(fs *flag.FlagSet) action {
	fn := fs.String("function", "", "the function to revoke (required): "+functionNames())
	return userChange(fs, "revoke", true, func(id string) userEdit {
		return func(u *identity.User) (string, any, any, error) {
			before := slices.Sorted(slices.Values(u.Functions))
			if slices.Contains(u.Functions, *fn) && len(u.Functions) == 1 {
				return "", nil, nil, conflict("%s is the only function of user %s: a user keeps at least one. Nothing written; to take everything away, disable the user (user disable -id %s)", *fn, id, id)
			}
			u.Functions = slices.DeleteFunc(u.Functions, func(f string) bool { return f == *fn })
			return "functions", before, slices.Sorted(slices.Values(u.Functions)), nil
		}
	}, func() error { return checkFunction("-function", *fn) })
}

func userSetActive(active bool) func(fs *flag.FlagSet) action {
	verb := "disable"
	if active {
		verb = "enable"
	}
	return func(fs *flag.FlagSet) action {
		return userChange(fs, verb, !active, func(string) userEdit {
			return func(u *identity.User) (string, any, any, error) {
				before := u.Active
				u.Active = active
				return "active", before, active, nil
			}
		}, nil)
	}
}

func userRename(fs *flag.FlagSet) action {
	name := fs.String("name", "", "the new display name (required)")
	return userChange(fs, "rename", false, func(string) userEdit {
		return func(u *identity.User) (string, any, any, error) {
			before := u.Name
			u.Name = *name
			return "name", before, *name, nil
		}
	}, func() error {
		if *name == "" {
			return usageError("-name is required")
		}
		return checkName(*name)
	})
}

func userDelete(fs *flag.FlagSet) action {
	id := fs.String("id", "", "the user's id (required)")
	var version versionFlag
	fs.Var(&version, "version", "delete only if the record is still at version `N` (as user get showed it)")
	noWait := declareNoWait(fs, true)
	return action{
		check: func() error { return checkUserID(*id) },
		run: func(ctx context.Context, s *session) error {
			w, err := s.whoAmI(ctx)
			if err != nil {
				return err
			}
			read, err := s.admin.User(ctx, *id)
			if errors.Is(err, identity.ErrUnknown) {
				// Nothing to delete; but an earlier delete of the user may
				// have been cut short before its wait: wait all the same.
				if _, err := s.waitRevoked(ctx, *id, !*noWait); err != nil {
					return err
				}
				return notFound("no user %s at %s: nothing deleted (deleted already, or never added)", *id, s.target)
			}
			if err != nil {
				return err
			}
			if version.set && read.Version != version.v {
				return conflict("user %s is at version %d, not %d as -version says: it changed since you read it. Nothing deleted; read it again (user get -id %s) and delete it if that still applies", *id, read.Version, version.v, *id)
			}
			err = s.admin.DeleteUser(ctx, read)
			var ce *dynamo.ConflictError
			deleted := err == nil
			switch {
			case errors.As(err, &ce):
				return conflict("user %s changed while this command ran (read at version %d): nothing deleted; read it again (user get -id %s) and delete it if that still applies", *id, read.Version, *id)
			case errors.Is(err, identity.ErrUnknown):
				// Deleted by someone else meanwhile: it is gone all the same.
			case err != nil:
				return err
			default:
				s.logChange(w, "user.delete", *id, "", viewUser(read), nil, read.Version)
			}
			waited, err := s.waitRevoked(ctx, *id, !*noWait)
			if err != nil {
				return err
			}
			v := viewUser(read)
			v.Deleted = true
			return s.emit(changed{Changed: deleted, User: v, WaitedSeconds: waited}, func(tw io.Writer) {
				fmt.Fprintf(tw, "deleted user %s (version %d) from %s; every call of %s is refused as unknown\n", *id, read.Version, s.target, *id)
				afterWait(tw, *id, waited)
				userRows(tw, v)
			})
		},
	}
}

func tableRemoveGrantCopies(*flag.FlagSet) action {
	return action{
		run: func(ctx context.Context, s *session) error {
			w, err := s.whoAmI(ctx)
			if err != nil {
				return err
			}
			n, err := s.admin.RemoveGrantCopies(ctx)
			out := struct {
				Removed int `json:"removed"`
			}{n}
			if n > 0 {
				s.logChange(w, "table.remove_grant_copies", "", "", nil, out, 0)
			}
			if err != nil {
				return fmt.Errorf("removed %d copies, then: %w (run the same command again: it removes what is left)", n, err)
			}
			return s.emit(out, func(tw io.Writer) {
				fmt.Fprintf(tw, "removed %d copies of users' grants from %s; no call reads them\n", n, s.target)
			})
		},
	}
}
