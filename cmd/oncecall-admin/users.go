package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/delivery"
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
	// MaybeWritten is true when the change's answer was lost and the
	// record changed since: the change may have been written; User is the
	// record as it is now.
	MaybeWritten bool `json:"maybe_written,omitempty"`
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
			_ = *noWait
			return s.changeUser(ctx, *id, version, verb, edit(*id), takes)
		},
	}
}

// declareNoWait declares -no-wait on a command that takes access away
// (takes), for scripts written when such a command waited: it changes
// nothing, since the change holds from its write (revokedLine).
func declareNoWait(fs *flag.FlagSet, takes bool) *bool {
	if !takes {
		return new(bool)
	}
	return fs.Bool("no-wait", false, "accepted for scripts of earlier versions, which waited here; the change holds from its write and nothing waits")
}

// revokedLine says what holds once a change that takes access away is in
// the record of id, revoked being the version it recorded (0 for a
// deleted record), and the bound of each part: every call reads the
// record; a ticket or a stored result is delivered and shown only while
// the record vouches for it (identity.User.Vouches), whenever its write
// landed; a call already under way ends within callback.Deadline, and a
// delivery attempt already past its check within its lease.
func revokedLine(w io.Writer, id string, revoked int64) {
	made := fmt.Sprintf("made under a version before %d", revoked)
	if revoked == 0 {
		made = "of the user"
	}
	fmt.Fprintf(w, "%s: every call that reads the record from now on is refused, and no ticket %s is delivered or shown, however late its write lands (tickets still queued are withheld). A call already under way may still answer until its deadline (%s), and a delivery attempt already past its check may finish within its lease (%s)\n",
		id, made, callback.Deadline, delivery.DefaultPolicy.LeaseFor())
}

// refuses reports whether cur, the record as it is, refuses everything
// that changing read to to took away.
func refuses(cur, read, to identity.User) bool {
	if !to.Active && cur.Active {
		return false
	}
	for _, f := range read.Functions {
		if !slices.Contains(to.Functions, f) && slices.Contains(cur.Functions, f) {
			return false
		}
	}
	return true
}

func (s *session) readUser(ctx context.Context, id string) (dynamo.UserRecord, error) {
	r, err := s.admin.User(ctx, id)
	if errors.Is(err, identity.ErrUnknown) {
		return r, notFound("no user %s at %s", id, s.target)
	}
	return r, err
}

// changeUser makes one change to user id. When the change takes access
// away (takes) it says what holds from then on (revokedLine). A change
// whose answer was lost and whose retry met a later change may have been
// written: it says so, and what the record refuses now.
func (s *session) changeUser(ctx context.Context, id string, version versionFlag, verb string, edit userEdit, takes bool) error {
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
	case errors.As(err, &ce) && ce.MaybeWritten && ce.Current != nil:
		if !takes || !refuses(ce.Current.User, read.User, to) {
			return conflict("user %s: the change may have been written (its answer was lost), and the record changed since (read at version %d, now %d) and does not say what was asked. Read it again (user get -id %s) and repeat the change if it still applies", id, read.Version, ce.Current.Version, id)
		}
		v := viewUser(*ce.Current)
		return s.emit(changed{MaybeWritten: true, User: v}, func(tw io.Writer) {
			fmt.Fprintf(tw, "%s: the change may have been written (its answer was lost, and the record changed since: read at version %d, now %d); the record refuses what was asked\n", id, read.Version, ce.Current.Version)
			revokedLine(tw, id, ce.Current.Revoked)
			userRows(tw, v)
		})
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
	v := viewUser(next)
	label := printedField(field)
	return s.emit(changed{Changed: did, User: v}, func(tw io.Writer) {
		if did {
			fmt.Fprintf(tw, "%s: %s %v -> %v (version %d -> %d)\n", id, label, show(before), show(after), read.Version, next.Version)
		} else {
			fmt.Fprintf(tw, "%s: %s already %v; nothing changed\n", id, label, show(after))
		}
		if takes {
			revokedLine(tw, id, next.Revoked)
		}
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
			_ = *noWait
			if errors.Is(err, identity.ErrUnknown) {
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
			case errors.As(err, &ce) && ce.MaybeWritten:
				return conflict("user %s may have been deleted (an answer was lost), but a record of this id exists now at version %d: it was added or changed again since. Read it (user get -id %s) and delete it again if that still applies", *id, ce.Current.Version, *id)
			case errors.As(err, &ce):
				return conflict("user %s changed while this command ran (read at version %d): nothing deleted; read it again (user get -id %s) and delete it if that still applies", *id, read.Version, *id)
			case errors.Is(err, identity.ErrUnknown):
				// Deleted by someone else meanwhile: it is gone all the same.
			case err != nil:
				return err
			default:
				s.logChange(w, "user.delete", *id, "", viewUser(read), nil, read.Version)
			}
			v := viewUser(read)
			v.Deleted = true
			return s.emit(changed{Changed: deleted, User: v}, func(tw io.Writer) {
				fmt.Fprintf(tw, "deleted user %s (version %d) from %s; every call of %s is refused as unknown\n", *id, read.Version, s.target, *id)
				revokedLine(tw, *id, 0)
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
