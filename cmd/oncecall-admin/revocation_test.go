package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/bench/loadtest"
	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/testing/suitetest"
)

// answer is one answer the flood got, with when its call was sent.
type answer struct {
	kind string // "create", "replay" or "read"
	loadtest.Result
	sent time.Time
}

// shows reports whether the answer made or disclosed anything: a ticket
// created, a stored result replayed, a ticket read.
func (a answer) shows() bool {
	return a.Status == http.StatusOK && (a.Outcome == "created" || a.Outcome == "deduplicated" || a.Outcome == "found")
}

// TestRevocationUnderAFloodThroughTwoServers runs two oncecall server
// processes on one store behind the fault proxy, which applies DynamoDB's
// transaction conflict rule and loses the answers of 5% of the writes it
// applied. One user floods its own calls through both (new operations,
// replays of its earlier ones, reads of its tickets) while an operator runs
// user disable, as oncecall-admin runs it. The command returns at once; once
// the calls under way when it returned have ended (callback.Deadline), the
// user has no ticket created and no stored result answered; every answer
// it gets is user_disabled. The same with the disable's own answer
// lost, and with two admin tools whose clocks are minutes apart (one
// renames the user from a clock running ahead, the other disables it from
// one running behind).
func TestRevocationUnderAFloodThroughTwoServers(t *testing.T) {
	if dynamotest.External() {
		t.Skip("the run starts its own stores")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	bins, err := loadtest.Build(ctx, dir, "cmd/oncecall")
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range []struct {
		name string
		// before runs before the flood; lose loses the disable's answer;
		// clock is the disabling tool's clock, ahead of this machine's.
		before func(t *testing.T, f *flood)
		lose   bool
		clock  time.Duration
	}{
		{name: "plain"},
		{name: "the disable's answer lost", lose: true},
		{name: "two admin tools minutes apart", clock: -3 * time.Minute, before: func(t *testing.T, f *flood) {
			f.admin(t, 7*time.Minute, exitOK, "user", "rename", "-id", "user-a", "-name", "Alice from the future")
		}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			f := startFlood(t, bins[0])
			if sc.before != nil {
				sc.before(t, f)
			}
			f.run()
			f.await(t, "an answer of each kind: the flood in full swing", func(as []answer) bool {
				kinds := map[string]bool{}
				for _, a := range as {
					kinds[a.kind] = kinds[a.kind] || a.shows()
				}
				return kinds["create"] && kinds["replay"] && kinds["read"]
			})
			if sc.lose {
				f.proxy.Inject("UpdateItem", dynamotest.Fault{AfterCommit: true})
			}
			seen := f.proxy.Seen("UpdateItem")
			start := time.Now()
			res := f.admin(t, sc.clock, exitOK, "user", "disable", "-id", "user-a")
			returned := time.Now()
			// Calls already under way end within their deadline; nothing
			// waits for them, and what they write is inert.
			settled := returned.Add(callback.Deadline)
			time.Sleep(time.Until(settled))
			tickets := f.tickets(t)
			f.await(t, fmt.Sprint(afterSettled, " answers to calls sent after the calls under way ended"), func(as []answer) bool {
				n := 0
				for _, a := range as {
					if a.sent.After(settled) {
						n++
					}
				}
				return n >= afterSettled
			})
			answers := f.stop()

			if took := returned.Sub(start); took >= callback.Deadline {
				t.Errorf("user disable took %v: it waits for nothing", took)
			}
			if !strings.Contains(res.stdout, "user-a: state active -> disabled") ||
				!strings.Contains(res.stdout, "every call that reads the record from now on is refused, and no ticket made under a version before") {
				t.Errorf("user disable printed:\n%s", res.stdout)
			}
			if sc.lose && f.proxy.Seen("UpdateItem")-seen < 2 {
				t.Errorf("the disable's lost answer was not sent again")
			}
			before, after := map[string]int{}, map[string]int{}
			late := 0
			for _, a := range answers {
				key := a.kind + " " + a.Outcome + " " + a.Code
				if a.sent.After(settled) {
					after[key]++
					if a.shows() || a.Status != http.StatusForbidden || a.Code != "user_disabled" {
						late++
					}
				} else {
					before[key]++
				}
			}
			t.Logf("answers before the calls under way ended: %v; after: %v; conflict rule %+v", before, after, f.rule.Stats())
			for _, s := range f.servers {
				for _, line := range strings.Split(s.Logs(), "\n") {
					if strings.Contains(line, `"level":"ERROR"`) {
						t.Logf("server error: %s", line)
					}
				}
			}
			if late > 0 {
				t.Errorf("%d answers to calls sent after the command returned and the calls under way ended were not user_disabled", late)
			}
			for _, k := range []string{"create created ", "replay deduplicated ", "read found "} {
				if before[k] == 0 {
					t.Errorf("no %q answer before the disable: the flood did not run as meant (%v)", k, before)
				}
			}
			if n := f.tickets(t); n != tickets {
				t.Errorf("%d tickets of user-a when the calls under way ended, %d at the end", tickets, n)
			}
			u := f.record(t)
			if u.Active {
				t.Errorf("user-a after the disable: %+v", u)
			}
			if sc.before != nil && (u.Name != "Alice from the future" || u.Version != 2) {
				t.Errorf("user-a after a rename and a disable from clocks 10 minutes apart: %+v, want both changes, at version 2", u)
			}
		})
	}
}

// afterSettled is how many answers to calls sent after the calls under way
// ended a scenario waits for.
const afterSettled = 20

// await waits until done holds of the flood's answers so far, checking
// every 10 ms for at most a minute; past that the flood is stopped and the
// test fails, naming what.
func (f *flood) await(t *testing.T, what string, done func([]answer) bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		f.mu.Lock()
		ok := done(f.answers)
		f.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			f.stop()
			t.Fatalf("after a minute of the flood, still not %s", what)
		}
	}
}

// flood is one scenario: a store, the fault proxy, two servers and the
// user's calls.
type flood struct {
	t       *testing.T
	proxy   *dynamotest.Proxy
	rule    *dynamotest.Conflicts
	store   *dynamotest.Env
	urls    []string
	servers []*loadtest.Server
	nonce   string
	// seeded are the user's earlier operations' request ids and their
	// tickets.
	seeded map[string]string

	stopc   chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	answers []answer
	hc      *http.Client
}

func startFlood(t *testing.T, bin string) *flood {
	t.Helper()
	db, err := localdb.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	seed := suitetest.Seed(t)
	f := &flood{t: t, proxy: dynamotest.NewProxy(t, db.URL), seeded: map[string]string{}, stopc: make(chan struct{}), hc: loadtest.NewClient(16)}
	t.Cleanup(f.hc.CloseIdleConnections)
	f.rule = &dynamotest.Conflicts{Hold: 15 * time.Millisecond, LoseRate: 0.05, Rand: rand.New(rand.NewPCG(seed, seed^0x5eed))}
	f.proxy.SetConflicts(f.rule)
	const table = "oncecall"
	env := []string{"HOOK_KEY=" + localdb.DemoHookKey, "LOG_LEVEL=INFO", "DYNAMODB_ENDPOINT=" + f.proxy.URL, "TABLE_NAME=" + table}
	for range 2 {
		s, err := loadtest.Start(bin, env...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
		f.urls = append(f.urls, s.URL+"/callback")
		f.servers = append(f.servers, s)
	}
	f.store = &dynamotest.Env{Client: dynamotest.NewClient(t, db.URL, nil), Table: table, Endpoint: db.URL}
	if f.nonce, err = nonce.Generate(localdb.DemoHookKey, nonce.MinCost); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		rid := fmt.Sprintf("seed-%d", i)
		r := f.call(context.Background(), i, createCall(rid))
		if r.Outcome != "created" {
			t.Fatalf("seeding %s: %+v", rid, r)
		}
		f.seeded[rid] = r.TicketID
	}
	return f
}

func createCall(requestID string) loadtest.Call {
	return loadtest.Identical(1, "user-a", requestID, map[string]any{"title": "Cannot sign in", "priority": "high"})[0]
}

func readCall(ticketID string) loadtest.Call {
	return loadtest.Call{Body: []byte(`{"type":"tool_call","function":{"name":"get_ticket","content":{"ticket_id":"` + ticketID +
		`"}},"context":{"externalUserId":"user-a","metadata":{}}}`)}
}

// call sends c through the servers in turn.
func (f *flood) call(ctx context.Context, i int, c loadtest.Call) loadtest.Result {
	return loadtest.Do(ctx, f.hc, f.urls[i%len(f.urls)], f.nonce, c)
}

// run starts the flood: workers each sending, in turn, a new operation, a
// replay of an earlier one and a read of its ticket, until stop.
func (f *flood) run() {
	seeded := make([]string, 0, len(f.seeded))
	for rid := range f.seeded {
		seeded = append(seeded, rid)
	}
	for w := range 8 {
		f.wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-f.stopc:
					return
				default:
				}
				var c loadtest.Call
				kind := []string{"create", "replay", "read"}[i%3]
				switch kind {
				case "create":
					c = createCall(fmt.Sprintf("flood-%d-%d", w, i))
				case "replay":
					c = createCall(seeded[i%len(seeded)])
				default:
					c = readCall(f.seeded[seeded[i%len(seeded)]])
				}
				sent := time.Now()
				r := f.call(context.Background(), w+i, c)
				f.mu.Lock()
				f.answers = append(f.answers, answer{kind: kind, Result: r, sent: sent})
				f.mu.Unlock()
			}
		})
	}
}

// stop ends the flood and returns its answers.
func (f *flood) stop() []answer {
	close(f.stopc)
	f.wg.Wait()
	return f.answers
}

// admin runs oncecall-admin against the scenario's store, through the
// proxy, with a clock skew ahead of this machine's, waiting for real.
func (f *flood) admin(t *testing.T, skew time.Duration, code int, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	tl := &tool{
		stdout: &out, stderr: &errOut, localEndpoint: closedEndpoint,
		getenv: func(k string) string {
			return map[string]string{"DYNAMODB_ENDPOINT": f.proxy.URL, "TABLE_NAME": f.store.Table, "ONCECALL_OPERATOR": "tester"}[k]
		},
		now: func() time.Time { return time.Now().Add(skew) },
	}
	res := result{tl.run(args), out.String(), errOut.String()}
	if res.code != code {
		t.Fatalf("oncecall-admin %s: exit %d, want %d\n%s%s", strings.Join(args, " "), res.code, code, res.stdout, res.stderr)
	}
	return res
}

// tickets counts user-a's tickets in the store, read past the proxy.
func (f *flood) tickets(t *testing.T) int {
	n := 0
	for _, it := range f.store.Items(t, "ticket") {
		if u, ok := it["user_id"].(*types.AttributeValueMemberS); ok && u.Value == "user-a" {
			n++
		}
	}
	return n
}

// record is user-a's record as the admin tool reads it.
func (f *flood) record(t *testing.T) userView {
	t.Helper()
	var u userView
	res := f.admin(t, 0, exitOK, "user", "get", "-id", "user-a", "-json")
	if err := json.Unmarshal([]byte(res.stdout), &u); err != nil {
		t.Fatal(err)
	}
	return u
}
