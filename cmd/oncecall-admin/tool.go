package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/identity"
)

// Exit codes. Scripts can rely on them; the usage lists them.
const (
	exitOK       = 0
	exitFailure  = 1 // the store failed or could not be reached
	exitUsage    = 2 // the command line or a setting must change
	exitNotFound = 3 // the user, ticket or operation does not exist
	exitConflict = 4 // refused by the record as it is: changed since read, exists, last function, delivery moved or held
)

// Time limits of one command.
const (
	commandTimeout = 3 * time.Minute
	// tableTimeout leaves room for DynamoDB to build an index on a table
	// that already holds items.
	tableTimeout = dynamo.IndexReadyTimeout + 5*time.Minute
)

// tool is one run of oncecall-admin. Tests build it with their own
// outputs, environment and local endpoint.
type tool struct {
	stdout, stderr io.Writer
	getenv         func(string) string
	// localEndpoint is where the local store of `make run` listens.
	localEndpoint string
	// pageSize, when not zero, is the store's Query page size.
	pageSize int32
	now      func() time.Time
	// sts, when not nil, establishes who makes a change whatever the
	// target (tests); nil: STS on AWS, the operator's name elsewhere.
	sts callerIdentityAPI
	// sleep, when not nil, is how the tool waits (tests record the
	// waits); nil: a timer.
	sleep func(ctx context.Context, d time.Duration) error
}

// wait waits d, or until ctx ends (its error then). Waits are measured on
// this machine's monotonic clock, never compared with a time another
// machine wrote.
func (t *tool) wait(ctx context.Context, d time.Duration) error {
	if t.sleep != nil {
		return t.sleep(ctx, d)
	}
	return dynamo.Sleep(ctx, d)
}

// command is one command of the tool.
type command struct {
	name     string // "user grant"
	summary  string // one line
	synopsis string // the flags, as the usage shows them
	example  string // one or more example lines, without the program name
	// store: the command reads or writes the store and takes the target
	// flags; change: it writes, so it needs to know who asks, and is logged.
	store, change bool
	// anyone: a change that needs no operator's name off AWS (it changes
	// no user or delivery); a name given is checked and logged.
	anyone bool
	// audit: the command writes or shows a delivery's audit, so it takes
	// -audit-key (a change on AWS requires it).
	audit bool
	// bind declares the command's flags on fs and returns its action.
	bind func(fs *flag.FlagSet) action
}

// action is what a command does once its flags are parsed.
type action struct {
	// check validates the flags without any I/O; it returns usage errors.
	check func() error
	// run does the work.
	run func(ctx context.Context, s *session) error
}

// exitError is an error with the exit code it ends the tool with.
type exitError struct {
	code int
	err  error
}

func (f *exitError) Error() string { return f.err.Error() }
func (f *exitError) Unwrap() error { return f.err }

func usageError(format string, args ...any) error {
	return &exitError{exitUsage, fmt.Errorf(format, args...)}
}

func notFound(format string, args ...any) error {
	return &exitError{exitNotFound, fmt.Errorf(format, args...)}
}

func conflict(format string, args ...any) error {
	return &exitError{exitConflict, fmt.Errorf(format, args...)}
}

// groups orders the top-level words of the usage.
var groups = []string{"user", "find", "delivery", "table", "nonce"}

func (t *tool) run(args []string) int {
	if len(args) == 0 {
		fmt.Fprint(t.stderr, t.usage())
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(t.stdout, t.usage())
		return exitOK
	}
	cmd, rest, err := lookup(args)
	if err != nil {
		return t.fail(err)
	}
	if cmd == nil { // a group word with -h, or alone
		if len(rest) > 0 && isHelp(rest[0]) {
			fmt.Fprint(t.stdout, t.groupUsage(args[0]))
			return exitOK
		}
		fmt.Fprint(t.stderr, t.groupUsage(args[0]))
		return exitUsage
	}
	inv, err := t.parse(cmd, rest)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(t.stdout, commandUsage(cmd, inv.fs))
		return exitOK
	}
	if err != nil {
		return t.fail(fmt.Errorf("%s: %w (oncecall-admin %s -h shows its usage)", cmd.name, err, cmd.name))
	}
	timeout := commandTimeout
	if cmd.name == "table create" {
		timeout = tableTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if !cmd.store {
		return t.fail(inv.act.run(ctx, &session{tool: t, cmd: cmd, out: t.stdout, json: inv.json}))
	}
	s, err := t.open(ctx, cmd, inv)
	if err != nil {
		return t.fail(err)
	}
	defer s.close()
	return t.fail(s.explain(inv.act.run(ctx, s)))
}

// lookup finds the command named by the first one or two words of args and
// returns the arguments after them. A group word without a known command
// returns a nil command (the group's usage is due), or an error.
func lookup(args []string) (*command, []string, error) {
	if removed, ok := removedCommands[strings.Join(args[:min(2, len(args))], " ")]; ok {
		return nil, nil, usageError("%s", removed)
	}
	for _, c := range commands {
		words := strings.Fields(c.name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return c, args[len(words):], nil
		}
	}
	if slices.Contains(groups, args[0]) {
		if len(args) == 1 || isHelp(args[1]) {
			return nil, args[1:], nil
		}
		return nil, nil, usageError("unknown command %q (oncecall-admin %s -h lists them)", strings.Join(args[:2], " "), args[0])
	}
	return nil, nil, usageError("unknown command %q (oncecall-admin -h lists them)", args[0])
}

func isHelp(a string) bool { return a == "-h" || a == "-help" || a == "--help" }

// removedCommands answers commands of earlier versions with what replaced
// them.
var removedCommands = map[string]string{
	"user put":   "user put was removed: it replaced the whole record (wiping the name, granting functions nobody asked for). Use user add to create a user, and user grant, revoke, disable, enable or rename to change one field",
	"ticket get": "ticket get was replaced by find -ticket ID, which shows the operation too",
	"user sync-grants": "user sync-grants was removed: every call reads the user's record itself, and no copy of a grant is kept or read. " +
		"table remove-grant-copies deletes the copies an earlier version wrote",
}

// invocation is a parsed command line.
type invocation struct {
	fs     *flag.FlagSet
	act    action
	json   bool
	target targetFlags
	who    operatorFlags
	audit  auditFlags
}

// parse parses a command's flags and checks them, without any I/O: a
// command line that parses can be run.
func (t *tool) parse(cmd *command, args []string) (invocation, error) {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	inv := invocation{fs: fs, act: cmd.bind(fs)}
	if cmd.store || cmd.name == "nonce" {
		fs.BoolVar(&inv.json, "json", false, "print JSON for scripts instead of a table")
	}
	if cmd.store {
		inv.target.declare(fs)
	}
	if cmd.change {
		inv.who.declare(fs, cmd.anyone)
	}
	if cmd.audit {
		inv.audit.declare(fs)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return inv, err
		}
		return inv, &exitError{exitUsage, err}
	}
	if fs.NArg() > 0 {
		return inv, usageError("unexpected argument %q", fs.Arg(0))
	}
	if inv.act.check != nil {
		if err := inv.act.check(); err != nil {
			return inv, err
		}
	}
	if !cmd.store {
		return inv, nil
	}
	tg, err := inv.target.resolve(t.getenv, t.localEndpoint)
	if err != nil {
		return inv, err
	}
	if cmd.audit {
		key, err := inv.audit.resolve(t.getenv)
		if err != nil {
			return inv, err
		}
		if key == "" && cmd.change && tg.kind == targetAWS {
			return inv, usageError("on AWS every decision carries a proof only the decision role can make: give -audit-key (the stack's AuditKeyArn output) or set %s; nothing was changed", envAuditKey)
		}
	}
	if cmd.change && tg.kind != targetAWS {
		if _, err := inv.who.local(t.getenv, cmd.anyone); err != nil {
			return inv, err
		}
	}
	return inv, nil
}

// fail prints err and returns its exit code; nil is exitOK.
func (t *tool) fail(err error) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(t.stderr, "oncecall-admin:", err)
	var f *exitError
	if errors.As(err, &f) {
		return f.code
	}
	switch {
	case errors.Is(err, identity.ErrUnknown):
		return exitNotFound
	case errors.Is(err, dynamo.ErrConflict), errors.Is(err, dynamo.ErrUserExists):
		return exitConflict
	}
	return exitFailure
}

// explain turns a store error into one that says what to fix for this
// target.
func (s *session) explain(err error) error {
	if err == nil {
		return nil
	}
	if dynamo.NoAnswer(err) {
		return &exitError{exitFailure, fmt.Errorf("no store answers at %s: %s", s.target.where(), s.target.unreachableHint())}
	}
	var nf *types.ResourceNotFoundException
	if errors.As(err, &nf) {
		return &exitError{exitUsage, fmt.Errorf("no table %s at %s: %s", s.target.table, s.target.where(), s.target.tableHint())}
	}
	return err
}

func (t *tool) usage() string {
	var b strings.Builder
	b.WriteString("usage: oncecall-admin COMMAND [flags]   (oncecall-admin COMMAND -h: its usage with an example)\n\ncommands:\n")
	for _, g := range groups {
		for _, c := range commands {
			if strings.Fields(c.name)[0] == g {
				fmt.Fprintf(&b, "  %-16s %s\n", c.name, c.summary)
			}
		}
	}
	b.WriteString(targetUsage)
	b.WriteString(exitUsageText)
	return b.String()
}

func (t *tool) groupUsage(group string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: oncecall-admin %s COMMAND [flags]   (oncecall-admin %s COMMAND -h: its usage with an example)\n\ncommands:\n", group, group)
	for _, c := range commands {
		if strings.Fields(c.name)[0] == group {
			fmt.Fprintf(&b, "  %-16s %s\n", c.name, c.summary)
		}
	}
	return b.String()
}

// commandUsage is what -h prints for cmd: synopsis, summary, example and
// every flag.
func commandUsage(cmd *command, fs *flag.FlagSet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: oncecall-admin %s %s\n\n%s\n\nexample:\n", cmd.name, cmd.synopsis, cmd.summary)
	for _, line := range strings.Split(cmd.example, "\n") {
		fmt.Fprintf(&b, "  oncecall-admin %s\n", line)
	}
	b.WriteString("\nflags:\n")
	fs.SetOutput(&b)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	if cmd.store {
		b.WriteString(targetUsage)
	}
	switch {
	case cmd.anyone:
		b.WriteString(anyoneUsage)
	case cmd.change:
		b.WriteString(operatorUsage)
	}
	b.WriteString(exitUsageText)
	return b.String()
}

const exitUsageText = `
exit codes:
  0  done
  1  failure: the store failed or could not be reached
  2  usage: a flag, an argument or a setting must change (nothing was done)
  3  not found: no such user, ticket or operation
  4  conflict: refused by the record as it is (changed since read, already
     exists, last function; a delivery not in the state or at the version
     given, delivered already, or held by an attempt); nothing was written
`
