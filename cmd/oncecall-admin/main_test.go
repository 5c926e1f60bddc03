package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// TestMain fails the package when a goroutine outlives its tests: every
// command closes its connections.
func TestMain(m *testing.M) { goleak.VerifyTestMain(dynamotest.Main(m)) }

// closedEndpoint is a loopback URL nothing listens on: the local store a
// test must never reach by accident.
const closedEndpoint = "http://127.0.0.1:1"

// rig is a fresh table seeded like make run seeds it, and the tool's
// environment pointing at it.
type rig struct {
	t    *testing.T
	env  *dynamotest.Env
	vars map[string]string
	// local is the tool's local endpoint (closedEndpoint unless a test
	// stands a store there).
	local    string
	pageSize int32
	// clock, when set, is the tool's clock (time.Now otherwise).
	clock func() time.Time
	// sts, when set, establishes who makes a change, as STS does on AWS.
	sts callerIdentityAPI
	// waits are the waits the tool made, which it skips unless realWait;
	// sleepErr, when set, cuts each one short with that error.
	waits    []time.Duration
	realWait bool
	sleepErr error
}

func newRig(t *testing.T) *rig {
	t.Helper()
	env := dynamotest.New(t)
	if _, err := localdb.SeedDemo(context.Background(), dynamo.New(env.Client, env.Table)); err != nil {
		t.Fatal(err)
	}
	return &rig{t: t, env: env, local: closedEndpoint,
		vars: map[string]string{"DYNAMODB_ENDPOINT": env.Endpoint, "TABLE_NAME": env.Table}}
}

// result is one run of the tool.
type result struct {
	code           int
	stdout, stderr string
}

func (r *rig) run(args ...string) result {
	r.t.Helper()
	var out, errOut bytes.Buffer
	now := r.clock
	if now == nil {
		now = time.Now
	}
	tl := &tool{
		stdout: &out, stderr: &errOut,
		getenv:        func(k string) string { return r.vars[k] },
		localEndpoint: r.local, pageSize: r.pageSize,
		now: now, sts: r.sts,
	}
	if !r.realWait {
		tl.sleep = func(_ context.Context, d time.Duration) error {
			r.waits = append(r.waits, d)
			return r.sleepErr
		}
	}
	code := tl.run(args)
	return result{code, out.String(), errOut.String()}
}

// must runs args and fails the test unless it exits with code.
func (r *rig) must(code int, args ...string) result {
	r.t.Helper()
	res := r.run(args...)
	if res.code != code {
		r.t.Fatalf("oncecall-admin %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), res.code, code, res.stdout, res.stderr)
	}
	return res
}

// items returns every item of the table, by pk, as stored.
func (r *rig) items() map[string]map[string]types.AttributeValue {
	r.t.Helper()
	out := map[string]map[string]types.AttributeValue{}
	for _, kind := range []string{"user", "operation", "ticket"} {
		for _, it := range r.env.Items(r.t, kind) {
			out[it[dynamo.PartitionKey].(*types.AttributeValueMemberS).Value] = it
		}
	}
	return out
}

// sameItems reports the first difference between two snapshots.
func sameItems(a, b map[string]map[string]types.AttributeValue) string {
	if !slices.Equal(slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))) {
		return "different items"
	}
	for k, ai := range a {
		if d := diffItem(ai, b[k]); d != "" {
			return k + ": " + d
		}
	}
	return ""
}

// diffItem names the attributes that differ between two items.
func diffItem(a, b map[string]types.AttributeValue) string {
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
		for k := range a {
			yield(k, true)
		}
		for k := range b {
			yield(k, true)
		}
	}))) {
		ja, _ := json.Marshal(a[k])
		jb, _ := json.Marshal(b[k])
		if setValues(a[k]) != nil || setValues(b[k]) != nil {
			ja, _ = json.Marshal(setValues(a[k]))
			jb, _ = json.Marshal(setValues(b[k]))
		}
		if !bytes.Equal(ja, jb) {
			diff = append(diff, k)
		}
	}
	return strings.Join(diff, ",")
}

// setValues is a string set's members, sorted (a set has no order).
func setValues(v types.AttributeValue) []string {
	if ss, ok := v.(*types.AttributeValueMemberSS); ok {
		return slices.Sorted(slices.Values(ss.Value))
	}
	return nil
}

func (r *rig) userItem(id string) map[string]types.AttributeValue {
	r.t.Helper()
	out, err := r.env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(r.env.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: "user#" + id}}})
	if err != nil {
		r.t.Fatal(err)
	}
	return out.Item
}

// changeLines returns the change log lines of a run, decoded.
func changeLines(t *testing.T, stderr string) []changeLog {
	t.Helper()
	var out []changeLog
	for _, line := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var c changeLog
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("change log line %q: %v", line, err)
		}
		out = append(out, c)
	}
	return out
}

func TestNonce(t *testing.T) {
	r := &rig{t: t, vars: map[string]string{}, local: closedEndpoint}
	h := strings.TrimSpace(r.must(exitOK, "nonce", "-cost", "4").stdout)
	v, _ := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err := v.Verify(h); err != nil {
		t.Fatalf("nonce %q does not verify: %v", h, err)
	}
	r.must(exitUsage, "nonce", "-cost", "40")
	var j struct{ Nonce string }
	if err := json.Unmarshal([]byte(r.must(exitOK, "nonce", "-cost", "4", "-json").stdout), &j); err != nil || v.Verify(j.Nonce) != nil {
		t.Fatalf("nonce -json: %+v %v", j, err)
	}
}

// TestNonceRefusesAnEmptyKey: -key given empty or blank (a variable that
// was never set, as in nonce -key "$KEY") is refused, printing no nonce,
// rather than hashing $HOOK_KEY or the public demo key in its place.
func TestNonceRefusesAnEmptyKey(t *testing.T) {
	for _, vars := range []map[string]string{{}, {"HOOK_KEY": "a-hook-key-of-thirty-two-bytes-or-more"}} {
		r := &rig{t: t, vars: vars, local: closedEndpoint}
		for _, key := range []string{"", " ", "\t"} {
			res := r.must(exitUsage, "nonce", "-key", key, "-cost", "4")
			if res.stdout != "" || !strings.Contains(res.stderr, "-key is empty") {
				t.Errorf("nonce -key %q (HOOK_KEY %q): stdout %q, stderr %q; want no nonce and a refusal naming -key",
					key, vars["HOOK_KEY"], res.stdout, res.stderr)
			}
		}
	}
}

// TestHelpHasAnExampleForEveryCommand: -h on every command prints its
// usage with an example, and every example is a valid command line.
func TestHelpHasAnExampleForEveryCommand(t *testing.T) {
	r := &rig{t: t, vars: map[string]string{"TABLE_NAME": "oncecall-Table-ABC123"}, local: closedEndpoint}
	for _, c := range commands {
		res := r.must(exitOK, append(strings.Fields(c.name), "-h")...)
		if !strings.Contains(res.stdout, "example:\n  oncecall-admin "+c.name) || !strings.Contains(res.stdout, "exit codes:") {
			t.Errorf("%s -h:\n%s", c.name, res.stdout)
		}
		for _, line := range strings.Split(c.example, "\n") {
			args, err := shellWords(line, map[string]string{"HOOK_KEY": "k"})
			if err != nil {
				t.Fatal(err)
			}
			if err := parseOnly(r, args); err != nil {
				t.Errorf("the example %q does not parse: %v", line, err)
			}
		}
	}
	for _, help := range [][]string{{"-h"}, {"help"}, {"user", "-h"}, {"find", "-h"}} {
		if res := r.must(exitOK, help...); !strings.Contains(res.stdout, "user grant") && !strings.Contains(res.stdout, "find") {
			t.Errorf("%v: %s", help, res.stdout)
		}
	}
	r.must(exitUsage)
	r.must(exitUsage, "user")
	r.must(exitUsage, "frobnicate")
	r.must(exitUsage, "user", "frobnicate")
	if res := r.must(exitUsage, "user", "put", "-id", "user-f", "-tenant", "tenant-c", "-disabled"); !strings.Contains(res.stderr, "user add") {
		t.Errorf("user put: %s", res.stderr)
	}
	if res := r.must(exitUsage, "ticket", "get", "-id", "x"); !strings.Contains(res.stderr, "find -ticket") {
		t.Errorf("ticket get: %s", res.stderr)
	}
}

// parseOnly parses a command line as the tool would, without running it.
func parseOnly(r *rig, args []string) error {
	tl := &tool{getenv: func(k string) string { return r.vars[k] }, localEndpoint: r.local}
	cmd, rest, err := lookup(args)
	if err != nil {
		return err
	}
	if cmd == nil {
		return usageError("%v is not a command", args)
	}
	_, err = tl.parse(cmd, rest)
	return err
}

func TestUserListOrderAndPages(t *testing.T) {
	r := newRig(t)
	proxy := dynamotest.NewProxy(t, r.env.Endpoint)
	r.vars["DYNAMODB_ENDPOINT"] = proxy.URL
	r.vars["ONCECALL_OPERATOR"] = "tester"
	for _, id := range []string{"user-z", "user-m", "user-c2"} {
		r.must(exitOK, "user", "add", "-id", id, "-tenant", "tenant-a", "-functions", "get_ticket")
	}
	want := []string{"user-a", "user-b", "user-c2", "user-d", "user-e", "user-m", "user-z"}
	r.pageSize = 2
	var got []string
	after := ""
	for pages := 1; ; pages++ {
		args := []string{"user", "list", "-tenant", "tenant-a", "-limit", "3", "-json"}
		if after != "" {
			args = append(args, "-after", after)
		}
		var page struct {
			Tenant string     `json:"tenant"`
			Users  []userView `json:"users"`
			Next   string     `json:"next"`
		}
		if err := json.Unmarshal([]byte(r.must(exitOK, args...).stdout), &page); err != nil {
			t.Fatal(err)
		}
		for _, u := range page.Users {
			got = append(got, u.ID)
			if u.Tenant != "tenant-a" {
				t.Errorf("user %s of tenant %s listed", u.ID, u.Tenant)
			}
		}
		if page.Next == "" {
			if pages != 3 {
				t.Errorf("%d pages of 3 for 7 users", pages)
			}
			break
		}
		after = page.Next
		if pages > 5 {
			t.Fatal("no last page")
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	if proxy.Seen("Scan") != 0 || proxy.Seen("Query") < 4 {
		t.Errorf("%d Query and %d Scan requests: want several Query pages of 2 and no Scan", proxy.Seen("Query"), proxy.Seen("Scan"))
	}
	// The table shows the same users, aligned, and says where the next page starts.
	res := r.must(exitOK, "user", "list", "-tenant", "tenant-a", "-limit", "2")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "ID") || !strings.HasPrefix(lines[1], "user-a  ") ||
		strings.Index(lines[0], "NAME") != strings.Index(lines[1], "alice") || !strings.Contains(lines[3], "-after user-b") {
		t.Errorf("user list table:\n%s", res.stdout)
	}
	r.must(exitUsage, "user", "list")
	r.must(exitUsage, "user", "list", "-tenant", "tenant-a", "-limit", "0")
	r.must(exitUsage, "user", "list", "-tenant", "tenant-a", "-limit", "1001")
	if res := r.must(exitOK, "user", "list", "-tenant", "tenant-none"); !strings.Contains(res.stdout, "(0 users") {
		t.Errorf("empty tenant: %s", res.stdout)
	}
}

// TestUserChangesTouchOneField: every change writes its field (and the
// version and index keys) and nothing else, and logs one line.
func TestUserChangesTouchOneField(t *testing.T) {
	r := newRig(t)
	r.vars["ONCECALL_OPERATOR"] = "tester"
	// revoked_at_ver: the version of a change that takes access away.
	bookkeeping := []string{"lk", "lk_sort", "ver", "revoked_at_ver"}
	for _, tc := range []struct {
		args  []string
		field string // attribute that changes
		log   string // its name in the change log
		// printed and again are the first line printed by the change and
		// by the same change repeated.
		printed, again string
	}{
		{[]string{"user", "grant", "-id", "user-e", "-function", "create_ticket"}, "functions", "functions",
			"user-e: functions get_ticket -> create_ticket,get_ticket (version 0 -> 1)", "user-e: functions already create_ticket,get_ticket; nothing changed"},
		{[]string{"user", "revoke", "-id", "user-a", "-function", "create_ticket"}, "functions", "functions",
			"user-a: functions create_ticket,get_ticket -> get_ticket (version 0 -> 1)", "user-a: functions already get_ticket; nothing changed"},
		{[]string{"user", "disable", "-id", "user-b"}, "active", "active",
			"user-b: state active -> disabled (version 0 -> 1)", "user-b: state already disabled; nothing changed"},
		{[]string{"user", "enable", "-id", "user-d"}, "active", "active",
			"user-d: state disabled -> active (version 0 -> 1)", "user-d: state already active; nothing changed"},
		{[]string{"user", "rename", "-id", "user-c", "-name", "Carol Smith"}, "name", "name",
			`user-c: name "carol" -> "Carol Smith" (version 0 -> 1)`, `user-c: name already "Carol Smith"; nothing changed`},
	} {
		id := tc.args[3]
		before := r.userItem(id)
		res := r.must(exitOK, tc.args...)
		after := r.userItem(id)
		var changedAttrs []string
		for _, k := range strings.Split(diffItem(before, after), ",") {
			if !slices.Contains(bookkeeping, k) {
				changedAttrs = append(changedAttrs, k)
			}
		}
		if !slices.Equal(changedAttrs, []string{tc.field}) {
			t.Errorf("%v changed %v, want only %s", tc.args, changedAttrs, tc.field)
		}
		logs := changeLines(t, res.stderr)
		if len(logs) != 1 || logs[0].Who != "tester" || logs[0].Via != envOperator || logs[0].Field != tc.log ||
			logs[0].UserID != id || logs[0].Action != "user."+tc.args[1] || logs[0].Version != 1 || logs[0].Table != r.env.Table {
			t.Errorf("%v logged %+v", tc.args, logs)
		}
		if first, _, _ := strings.Cut(res.stdout, "\n"); first != tc.printed {
			t.Errorf("%v printed %q, want %q", tc.args, first, tc.printed)
		}
		// The same change again changes nothing and logs nothing.
		again := r.must(exitOK, tc.args...)
		if first, _, _ := strings.Cut(again.stdout, "\n"); first != tc.again {
			t.Errorf("%v repeated printed %q, want %q", tc.args, first, tc.again)
		}
		if len(changeLines(t, again.stderr)) != 0 || !strings.Contains(again.stdout, "nothing changed") {
			t.Errorf("%v repeated: %s %s", tc.args, again.stdout, again.stderr)
		}
		if d := diffItem(after, r.userItem(id)); d != "" {
			t.Errorf("%v repeated rewrote %s", tc.args, d)
		}
	}
	// What dave was granted before being disabled comes back with enable,
	// and erin's name survived the grant.
	var u userView
	_ = json.Unmarshal([]byte(r.must(exitOK, "user", "get", "-id", "user-e", "-json").stdout), &u)
	if u.Name != "erin" || !slices.Equal(u.Functions, []string{"create_ticket", "get_ticket"}) || u.Version != 1 {
		t.Errorf("user-e after grant: %+v", u)
	}
	_ = json.Unmarshal([]byte(r.must(exitOK, "user", "get", "-id", "user-d", "-json").stdout), &u)
	if !u.Active || u.Name != "dave" || !slices.Equal(u.Functions, []string{"create_ticket", "get_ticket"}) {
		t.Errorf("user-d after enable: %+v", u)
	}
	// The log says what the field was and became.
	res := r.must(exitOK, "user", "disable", "-id", "user-e", "-operator", "alice")
	logs := changeLines(t, res.stderr)
	if len(logs) != 1 || logs[0].Who != "alice" || logs[0].Via != "-operator" || logs[0].Before != true || logs[0].After != false ||
		logs[0].Target != "endpoint "+r.env.Endpoint || logs[0].Version != 2 {
		t.Errorf("disable logged %+v", logs)
	}
}

func TestUserAdd(t *testing.T) {
	r := newRig(t)
	r.vars["ONCECALL_OPERATOR"] = "tester"
	res := r.must(exitOK, "user", "add", "-id", "user-f", "-tenant", "tenant-c", "-name", "frank", "-functions", "get_ticket", "-disabled", "-json")
	var c changed
	if err := json.Unmarshal([]byte(res.stdout), &c); err != nil || !c.Changed || c.User.Active || c.User.Tenant != "tenant-c" {
		t.Fatalf("user add -json: %+v %v", c, err)
	}
	if logs := changeLines(t, res.stderr); len(logs) != 1 || logs[0].Action != "user.add" || logs[0].Before != nil {
		t.Errorf("user add logged %+v", logs)
	}
	before := r.items()
	res = r.must(exitConflict, "user", "add", "-id", "user-f", "-tenant", "tenant-x", "-functions", "create_ticket")
	if !strings.Contains(res.stderr, "already exists") || len(changeLines(t, res.stderr)) != 0 {
		t.Errorf("second add: %s", res.stderr)
	}
	if d := sameItems(before, r.items()); d != "" {
		t.Errorf("a refused add changed %s", d)
	}
	r.must(exitUsage, "user", "add", "-id", "user-g", "-tenant", "tenant-c")                              // no functions
	r.must(exitUsage, "user", "add", "-id", "user-g", "-tenant", "tenant-c", "-functions", "drop_tables") // unknown
	r.must(exitUsage, "user", "add", "-id", "user-g", "-functions", "get_ticket")                         // no tenant
}

// TestRefusalsChangeNothing: each refusal exits non-zero with a message
// and leaves every item as it was.
func TestRefusalsChangeNothing(t *testing.T) {
	r := newRig(t)
	before := r.items()
	for _, tc := range []struct {
		code int
		args []string
		says string
	}{
		{exitNotFound, []string{"user", "grant", "-id", "nobody", "-function", "get_ticket", "-operator", "o"}, "no user nobody"},
		{exitNotFound, []string{"user", "get", "-id", "nobody"}, "no user nobody"},
		{exitUsage, []string{"user", "disable", "-id", "user-a"}, "-operator NAME or set ONCECALL_OPERATOR"},
		{exitUsage, []string{"user", "disable", "-id", "user\x01a", "-operator", "o"}, "control characters"},
		{exitUsage, []string{"user", "disable", "-id", " user-a", "-operator", "o"}, "space"},
		{exitUsage, []string{"user", "disable", "-id", strings.Repeat("u", 257), "-operator", "o"}, "longer than 256"},
		{exitUsage, []string{"user", "disable", "-operator", "o"}, "-id is required"},
		{exitUsage, []string{"user", "disable", "-id", "user-a", "-operator", "bad\nname"}, "-operator must be"},
		{exitUsage, []string{"user", "grant", "-id", "user-a", "-function", "drop_tables", "-operator", "o"}, "not one of oncecall's functions"},
		{exitUsage, []string{"user", "grant", "-id", "user-a", "-function", "get_ticket", "-operator", "o", "extra"}, "unexpected argument"},
		{exitUsage, []string{"user", "grant", "-id", "user-a", "-function", "get_ticket", "-operator", "o", "-version", "-1"}, "not a version"},
		{exitConflict, []string{"user", "revoke", "-id", "user-e", "-function", "get_ticket", "-operator", "o"}, "disable the user"},
		{exitConflict, []string{"user", "disable", "-id", "user-a", "-version", "3", "-operator", "o"}, "at version 0, not 3"},
		{exitUsage, []string{"find", "-ticket", "not-a-uuid"}, "not a ticket id"},
		{exitUsage, []string{"find", "-op", "ABC"}, "not an operation key"},
		{exitUsage, []string{"find", "-tenant", "tenant-a", "-request", "has space"}, "not a request id"},
		{exitUsage, []string{"find", "-tenant", "tenant-a"}, "-tenant and -request go together"},
		{exitUsage, []string{"find", "-request", "r"}, "-tenant and -request go together"},
		{exitUsage, []string{"find", "-ticket", "5b0c4f2e-8d1a-4c3b-9e7f-0a1b2c3d4e5f", "-op", "x"}, "one handle"},
		{exitUsage, []string{"find"}, "one handle"},
		{exitNotFound, []string{"find", "-ticket", "5b0c4f2e-8d1a-4c3b-9e7f-0a1b2c3d4e5f"}, "no ticket"},
		{exitNotFound, []string{"find", "-op", strings.Repeat("ab", 32)}, "no operation"},
		{exitNotFound, []string{"find", "-tenant", "tenant-a", "-request", "nothing-here"}, "no ticket for request"},
	} {
		res := r.run(tc.args...)
		if res.code != tc.code || !strings.Contains(res.stderr, tc.says) {
			t.Errorf("%q: exit %d, want %d; stderr %q should say %q", tc.args, res.code, tc.code, res.stderr, tc.says)
		}
		if len(changeLines(t, res.stderr)) != 0 || res.stdout != "" {
			t.Errorf("%q printed %q and logged a change", tc.args, res.stdout)
		}
	}
	if d := sameItems(before, r.items()); d != "" {
		t.Errorf("the refusals changed %s", d)
	}
}

// racer is a store front that, before forwarding the first UpdateItem,
// lets another change happen: the race the version condition is for.
type racer struct {
	proxy *httputil.ReverseProxy
	once  sync.Once
	first func()
}

func (rc *racer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if strings.HasSuffix(req.Header.Get("X-Amz-Target"), ".UpdateItem") {
		rc.once.Do(rc.first)
	}
	rc.proxy.ServeHTTP(w, req)
}

func TestConcurrentChangeIsRefused(t *testing.T) {
	r := newRig(t)
	r.vars["ONCECALL_OPERATOR"] = "tester"
	u, err := url.Parse(r.env.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	tr := &http.Transport{}
	rp.Transport = tr
	// The other operator's change goes straight to the store, between this
	// command's read and its write.
	other := &rig{t: t, env: r.env, local: closedEndpoint, vars: map[string]string{
		"DYNAMODB_ENDPOINT": r.env.Endpoint, "TABLE_NAME": r.env.Table, "ONCECALL_OPERATOR": "other"}}
	front := httptest.NewServer(&racer{proxy: rp, first: func() {
		other.must(exitOK, "user", "rename", "-id", "user-e", "-name", "Erin Other")
	}})
	t.Cleanup(func() { front.Close(); tr.CloseIdleConnections() })
	r.vars["DYNAMODB_ENDPOINT"] = front.URL

	res := r.must(exitConflict, "user", "grant", "-id", "user-e", "-function", "create_ticket")
	if !strings.Contains(res.stderr, "changed while this command ran (read at version 0, now 1)") || len(changeLines(t, res.stderr)) != 0 {
		t.Errorf("the losing change said %q", res.stderr)
	}
	var v userView
	_ = json.Unmarshal([]byte(other.must(exitOK, "user", "get", "-id", "user-e", "-json").stdout), &v)
	if v.Name != "Erin Other" || !slices.Equal(v.Functions, []string{"get_ticket"}) || v.Version != 1 {
		t.Errorf("after the race: %+v; want the other change only", v)
	}
	// Read again and repeated, it applies on top of the other change.
	r.must(exitOK, "user", "grant", "-id", "user-e", "-function", "create_ticket", "-version", "1")
	_ = json.Unmarshal([]byte(other.must(exitOK, "user", "get", "-id", "user-e", "-json").stdout), &v)
	if v.Name != "Erin Other" || !slices.Equal(v.Functions, []string{"create_ticket", "get_ticket"}) || v.Version != 2 {
		t.Errorf("after the repeat: %+v", v)
	}
}

// TestLostAnswerAfterCommit: the store commits a change and its answer is
// lost; the retry meets its own write and reports success once.
func TestLostAnswerAfterCommit(t *testing.T) {
	r := newRig(t)
	proxy := dynamotest.NewProxy(t, r.env.Endpoint)
	proxy.Inject("UpdateItem", dynamotest.Fault{AfterCommit: true})
	r.vars["DYNAMODB_ENDPOINT"] = proxy.URL
	res := r.must(exitOK, "user", "disable", "-id", "user-a", "-operator", "tester", "-json")
	var c changed
	if err := json.Unmarshal([]byte(res.stdout), &c); err != nil || !c.Changed || c.User.Active || c.User.Version != 1 {
		t.Errorf("disable after a lost answer: %+v %v", c, err)
	}
	if n := len(changeLines(t, res.stderr)); n != 1 || proxy.Seen("UpdateItem") != 2 {
		t.Errorf("%d log lines, %d UpdateItem requests; want 1 and 2", n, proxy.Seen("UpdateItem"))
	}
}

// created writes one create_ticket operation and its ticket through the
// callback's own transaction.
func created(t *testing.T, env *dynamotest.Env, u identity.User, key, requestID, description string, at time.Time) ticket.Ticket {
	t.Helper()
	// As the callback does: the first ticket of the request id takes the
	// id the outcome read finds, a later one a random id.
	store := dynamo.New(env.Client, env.Table)
	first, err := store.FirstTicketID(context.Background(), u.ExternalID, requestID)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{first, ticket.NewID()} {
		rec := idempotency.Record{
			Key: key, UserID: u.ExternalID, Tenant: u.Tenant, Function: ticket.CreateName,
			State: idempotency.Completed, Fingerprint: "fp", TicketID: id,
			Result:    ticket.Created(id),
			CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour),
		}
		tk := ticket.Ticket{ID: id, Tenant: u.Tenant, UserID: u.ExternalID, Title: "Cannot sign in", Description: description,
			Priority: "normal", CreatedAt: at, Function: ticket.CreateName, OperationKey: key, RequestID: requestID}
		existing, taken, err := store.Create(context.Background(), rec, tk, nil)
		if errors.Is(err, ticket.ErrExists) {
			continue
		}
		if err != nil || taken {
			t.Fatalf("Create = %v, %v", existing, err)
		}
		return tk
	}
	t.Fatal("no ticket id left")
	return ticket.Ticket{}
}

func TestFind(t *testing.T) {
	r := newRig(t)
	alice := localdb.DemoUsers[0]
	carol := localdb.DemoUsers[2]
	now := time.Now().UTC()
	keyA, keyB, keyC := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)
	second := created(t, r.env, alice, keyB, "req-1", "", now.Add(time.Millisecond))
	first := created(t, r.env, alice, keyA, "req-1", "my password is hunter2", now)
	created(t, r.env, carol, keyC, "req-1", "", now)

	type out struct {
		Matches []struct {
			Ticket    *ticketView    `json:"ticket"`
			Operation *operationView `json:"operation"`
			Delivery  any            `json:"delivery"`
		} `json:"matches"`
		Truncated bool `json:"truncated"`
	}
	var o out
	if err := json.Unmarshal([]byte(r.must(exitOK, "find", "-tenant", "tenant-a", "-request", "req-1", "-json").stdout), &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Matches) != 2 || o.Matches[0].Ticket.ID != first.ID || o.Matches[1].Ticket.ID != second.ID || o.Truncated {
		t.Fatalf("find by request: %+v", o)
	}
	m := o.Matches[0]
	if m.Operation == nil || m.Operation.Key != keyA || m.Operation.State != "completed" || !m.Operation.Live || m.Operation.ExpiresAt == "" ||
		m.Ticket.Description != "" || m.Ticket.DescriptionChars != 22 || m.Operation.Result != nil || m.Delivery != nil {
		t.Errorf("first match: ticket %+v operation %+v", m.Ticket, m.Operation)
	}
	res := r.must(exitOK, "find", "-ticket", first.ID)
	if strings.Contains(res.stdout, "hunter2") || !strings.Contains(res.stdout, "(22 characters; -full shows it)") ||
		!strings.Contains(res.stdout, "completed") || !strings.Contains(res.stdout, "live:") {
		t.Errorf("find -ticket:\n%s", res.stdout)
	}
	if res := r.must(exitOK, "find", "-ticket", first.ID, "-full"); !strings.Contains(res.stdout, "hunter2") || !strings.Contains(res.stdout, `"status":"created"`) {
		t.Errorf("find -ticket -full:\n%s", res.stdout)
	}
	if err := json.Unmarshal([]byte(r.must(exitOK, "find", "-op", keyB, "-json").stdout), &o); err != nil || len(o.Matches) != 1 || o.Matches[0].Ticket.ID != second.ID {
		t.Errorf("find -op: %+v %v", o, err)
	}
	r.must(exitOK, "find", "-tenant", "tenant-a", "-request", "req-1", "-function", "create_ticket")
	r.must(exitNotFound, "find", "-tenant", "tenant-a", "-request", "req-1", "-function", "get_ticket")
	r.must(exitNotFound, "find", "-tenant", "tenant-c", "-request", "req-1")
	// After its window the operation item is deleted (TTL); the ticket is
	// still found, and says so.
	r.env.DeleteItem(t, "op#"+keyA)
	if res := r.must(exitOK, "find", "-ticket", first.ID); !strings.Contains(res.stdout, "deleted after its deduplication window") {
		t.Errorf("find after the operation expired:\n%s", res.stdout)
	}
	r.must(exitNotFound, "find", "-op", keyA)
}

func TestTargets(t *testing.T) {
	r := &rig{t: t, vars: map[string]string{}, local: closedEndpoint}
	get := []string{"user", "get", "-id", "user-a"}
	for _, tc := range []struct {
		vars  map[string]string
		flags []string
		code  int
		says  string
	}{
		// Nothing set: the local store of make run, which is not running here.
		{nil, nil, exitFailure, "no store answers at " + closedEndpoint + " (the local store of make run): start make run"},
		{nil, []string{"-local"}, exitFailure, "start make run"},
		{map[string]string{"DYNAMODB_ENDPOINT": closedEndpoint}, nil, exitFailure, "start make run"},
		{map[string]string{"DYNAMODB_ENDPOINT": "http://127.0.0.1:2"}, nil, exitFailure, "(from DYNAMODB_ENDPOINT): check the URL given by DYNAMODB_ENDPOINT"},
		{nil, []string{"-endpoint", "http://127.0.0.1:2"}, exitFailure, "(from -endpoint)"},
		{nil, []string{"-endpoint", "ftp://x"}, exitUsage, "not an http:// or https:// URL"},
		{nil, []string{"-endpoint", "https://dynamodb.eu-west-1.amazonaws.com"}, exitUsage, "use -aws"},
		{map[string]string{"DYNAMODB_ENDPOINT": "http://127.0.0.1:2"}, []string{"-local"}, exitUsage, "unset DYNAMODB_ENDPOINT (or drop -local)"},
		{nil, []string{"-local", "-aws"}, exitUsage, "choose one target"},
		{nil, []string{"-aws"}, exitUsage, "-aws needs the table: set TABLE_NAME"},
		{map[string]string{"TABLE_NAME": "t", "DYNAMODB_ENDPOINT": closedEndpoint}, []string{"-aws"}, exitUsage, "unset DYNAMODB_ENDPOINT (or drop -aws)"},
	} {
		r.vars = tc.vars
		if r.vars == nil {
			r.vars = map[string]string{}
		}
		res := r.run(append(slices.Clone(get), tc.flags...)...)
		if res.code != tc.code || !strings.Contains(res.stderr, tc.says) {
			t.Errorf("%v %v: exit %d, want %d; stderr %q should say %q", tc.vars, tc.flags, res.code, tc.code, res.stderr, tc.says)
		}
	}
	// A change without an operator is refused before any connection, on
	// every target but AWS.
	r.vars = map[string]string{}
	if res := r.run("user", "disable", "-id", "user-a"); res.code != exitUsage || !strings.Contains(res.stderr, "ONCECALL_OPERATOR") {
		t.Errorf("a change without an operator: %d %s", res.code, res.stderr)
	}

	// Beside make run, with nothing set, the tool reaches its store.
	env := newRig(t)
	env.local, env.vars = env.env.Endpoint, map[string]string{"TABLE_NAME": env.env.Table}
	if res := env.must(exitOK, "user", "get", "-id", "user-a"); !strings.Contains(res.stdout, "alice") {
		t.Errorf("default target: %s", res.stdout)
	}
	env.must(exitOK, "user", "get", "-id", "user-a", "-local")
	env.vars["TABLE_NAME"] = "no-such-table"
	if res := env.must(exitUsage, "user", "get", "-id", "user-a"); !strings.Contains(res.stderr, "no table no-such-table at") {
		t.Errorf("missing table: %s", res.stderr)
	}
}

func TestTableCreate(t *testing.T) {
	ep, _ := dynamotest.Endpoint(t)
	table := "admin-table-" + time.Now().Format("150405.000000000")
	client := dynamotest.NewClient(t, ep, nil)
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
	})
	r := &rig{t: t, local: closedEndpoint, vars: map[string]string{"DYNAMODB_ENDPOINT": ep, "TABLE_NAME": table}}
	// Creating the table changes no user: it needs no operator (README
	// runs it as plain table create), and logs who ran it when named.
	res := r.must(exitOK, "table", "create", "-json")
	var out struct {
		Created      bool     `json:"created"`
		IndexesAdded []string `json:"indexes_added"`
		TTL          string   `json:"ttl"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || !out.Created || out.TTL == "" {
		t.Fatalf("table create: %s %v", res.stdout, err)
	}
	if logs := changeLines(t, res.stderr); len(logs) != 1 || logs[0].Action != "table.create" || logs[0].Who != "" || logs[0].Via != "unnamed" {
		t.Errorf("table create logged %+v", logs)
	}
	res = r.must(exitOK, "table", "create", "-operator", "tester")
	if !strings.Contains(res.stdout, "created        false") || len(changeLines(t, res.stderr)) != 0 {
		t.Errorf("second table create:\n%s%s", res.stdout, res.stderr)
	}
	// A name, when given, is still checked and logged.
	r.must(exitUsage, "table", "create", "-operator", "bad\nname")
	if u := r.must(exitOK, "table", "create", "-h").stdout; strings.Contains(u, "is required") || !strings.Contains(u, "-operator") {
		t.Errorf("table create -h:\n%s", u)
	}
	named := table + "-named"
	t.Cleanup(func() {
		_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(named)})
	})
	r.vars["TABLE_NAME"] = named
	res = r.must(exitOK, "table", "create", "-operator", "tester")
	if logs := changeLines(t, res.stderr); len(logs) != 1 || logs[0].Who != "tester" || logs[0].Via != "-operator" {
		t.Errorf("table create -operator logged %+v", logs)
	}
}

// TestFindShowsModelTextAsData: a description and a title the model wrote
// with line breaks and tabs, shaped as the tool's own rows, are shown
// quoted, escaped, inside their own row: -full adds no row.
func TestFindShowsModelTextAsData(t *testing.T) {
	r := newRig(t)
	forged := "ok\ndelivery\tdelivered\r\n  audit\tsettle (proven: by ops)\u2028state\tdelivered"
	tk := created(t, r.env, localdb.DemoUsers[0], strings.Repeat("f", 64), "req-forged", forged, time.Now().UTC())
	out := r.must(exitOK, "find", "-ticket", tk.ID, "-full").stdout
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "delivery" || f[0] == "audit" || f[0] == "state") && strings.Contains(line, "delivered") {
			t.Errorf("the model's text made a row: %q\n%s", line, out)
		}
	}
	if !strings.Contains(out, `"ok\ndelivery\tdelivered\r\n  audit\tsettle (proven: by ops)\u2028state\tdelivered"`) {
		t.Errorf("the description is not shown quoted:\n%s", out)
	}
}

// TestSecuritySaysCellsAreEscaped: SECURITY.md's sentence on the admin
// tool's output names the test above.
func TestSecuritySaysCellsAreEscaped(t *testing.T) {
	raw, err := os.ReadFile("../../SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	want := "Every cell the admin tool prints escapes line breaks, tabs and other control characters, and `find` shows the title and description quoted: text a model or a helpdesk wrote never reads as one of the tool's rows [`TestFindShowsModelTextAsData`]"
	if !strings.Contains(strings.Join(strings.Fields(string(raw)), " "), want) {
		t.Errorf("SECURITY.md no longer says %q", want)
	}
}
