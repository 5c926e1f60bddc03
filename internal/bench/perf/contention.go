package perf

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Settings of the contention run.
const (
	// contentionHold is how long each transaction holds its items under
	// the conflict rule: a typical transactional write on DynamoDB.
	contentionHold = 15 * time.Millisecond
	// contentionUsers is how many users the spread load is spread over.
	contentionUsers = 256
	contentionTable = "oncecall-contention"
	// contentionWindows is how many windows each load of a concurrency
	// runs in, taking turns with the other's.
	contentionWindows = 6
)

// contentionConcurrency are the numbers of concurrent callers measured.
var contentionConcurrency = []int{16, 64, 256}

// LoadRun is what one load of created calls did.
type LoadRun struct {
	Users, Callers int
	Calls, Created int64
	Busy, Other    int64
	Took           time.Duration
	Cancelled      int
}

// add counts window w of the same load in l.
func (l *LoadRun) add(w LoadRun) {
	l.Calls, l.Created, l.Busy, l.Other = l.Calls+w.Calls, l.Created+w.Created, l.Busy+w.Busy, l.Other+w.Other
	l.Took += w.Took
	l.Cancelled += w.Cancelled
}

// Rate is created calls per second.
func (l LoadRun) Rate() float64 { return float64(l.Created) / l.Took.Seconds() }

// BusyRate is the share of calls answered busy.
func (l LoadRun) BusyRate() float64 { return float64(l.Busy) / float64(max(1, l.Calls)) }

// ContentionResult is the contention run.
type ContentionResult struct {
	// Runs pairs, per concurrency, one user's load and the spread one.
	Runs [][2]LoadRun
	// Burst counts the seed's burst: runs, and how many ended 1 created
	// and 9 deduplicated with no busy answer.
	BurstRuns, BurstClean int
	BurstBusy             int
}

// Contention drives created calls through the local HTTP path behind the
// nonce check (BCrypt's cost is per core, not per user, and would hide
// the store) over a store with DynamoDB's transaction conflict rule in
// front (dynamotest.Conflicts, each transaction holding its items
// contentionHold): for each concurrency, one user's callers, then the
// same callers spread over contentionUsers users, each for d. Then the
// seed's burst: ten identical calls at once, five through each of two
// services (two containers: their own store clients), real
// nonces at AIVAX's cost, bursts times.
func Contention(ctx context.Context, st *Store, d time.Duration, bursts int) (ContentionResult, error) {
	var r ContentionResult
	proxy, stop := dynamotest.StartProxy(st.URL)
	defer stop()
	rule := &dynamotest.Conflicts{Hold: contentionHold}
	proxy.Conflicts = rule
	svc, err := StartService(ctx, proxy.URL, contentionTable)
	if err != nil {
		return r, err
	}
	defer func() { _ = svc.Close() }()
	users := make([]string, contentionUsers)
	for i := range users {
		users[i] = fmt.Sprintf("load-%03d", i)
		if _, err := svc.Store.AddUser(ctx, identity.User{ExternalID: users[i], Tenant: "tenant-load", Active: true,
			Functions: []string{ticket.CreateName, ticket.GetName}}); err != nil {
			return r, err
		}
	}
	svc.Handler.Verifier = NoNonceCheck{}
	load := func(callers int, d time.Duration, pick func(caller, i int) string) (LoadRun, error) {
		lr := LoadRun{Callers: callers}
		before := rule.Stats().Cancelled
		var calls, created, busy, other atomic.Int64
		var wg sync.WaitGroup
		var firstErr atomic.Value
		deadline := time.Now().Add(d)
		start := time.Now()
		for c := range callers {
			wg.Go(func() {
				client := NewClient(UncheckedNonce)
				defer client.Close()
				for i := 0; time.Now().Before(deadline); i++ {
					reply, _, err := client.Post(svc.URL, CreateBody(pick(c, i), fmt.Sprintf("load-%d-%d-%d-%d", callers, c, i, start.UnixNano())))
					calls.Add(1)
					switch {
					case err != nil:
						firstErr.CompareAndSwap(nil, err)
						return
					case reply.Kind() == "created":
						created.Add(1)
					case reply.Kind() == "busy":
						busy.Add(1)
					default:
						other.Add(1)
					}
				}
			})
		}
		wg.Wait()
		lr.Took = time.Since(start)
		lr.Calls, lr.Created, lr.Busy, lr.Other = calls.Load(), created.Load(), busy.Load(), other.Load()
		lr.Cancelled = rule.Stats().Cancelled - before
		if err, _ := firstErr.Load().(error); err != nil {
			return lr, err
		}
		return lr, st.Prune(ctx, contentionTable)
	}
	// The two loads of a concurrency take turns, contentionWindows
	// windows each, each going first in every other pair, so that what
	// else the machine does weighs on both alike.
	oneUser := func(int, int) string { return users[0] }
	spreadUsers := func(caller, i int) string { return users[(caller*7919+i)%contentionUsers] }
	for _, c := range contentionConcurrency {
		runs := [2]LoadRun{{Callers: c, Users: 1}, {Callers: c, Users: contentionUsers}}
		picks := [2]func(int, int) string{oneUser, spreadUsers}
		for i := range contentionWindows {
			for _, k := range [][2]int{{0, 1}, {1, 0}}[i%2] {
				w, err := load(c, d/contentionWindows, picks[k])
				if err != nil {
					return r, err
				}
				runs[k].add(w)
			}
		}
		r.Runs = append(r.Runs, runs)
	}

	// The seed's burst, through two services with real nonces.
	svc.Handler.Verifier, err = nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		return r, err
	}
	other, err := StartService(ctx, proxy.URL, contentionTable)
	if err != nil {
		return r, err
	}
	defer func() { _ = other.Close() }()
	client, err := DemoClient(AIVAXCost)
	if err != nil {
		return r, err
	}
	defer client.Close()
	for b := range bursts {
		rid := fmt.Sprintf("burst-%d-%d", time.Now().UnixNano(), b)
		kinds := make([]string, 10)
		var wg sync.WaitGroup
		for i := range kinds {
			url := svc.URL
			if i%2 == 1 {
				url = other.URL
			}
			wg.Go(func() {
				reply, _, err := client.Post(url, CreateBody("user-a", rid))
				if err != nil {
					kinds[i] = "error"
					return
				}
				kinds[i] = reply.Kind()
			})
		}
		wg.Wait()
		n := map[string]int{}
		for _, k := range kinds {
			n[k]++
		}
		r.BurstRuns++
		r.BurstBusy += n["busy"]
		if n["created"] == 1 && n["deduplicated"] == 9 {
			r.BurstClean++
		}
	}
	return r, nil
}

func contentionPart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## One user's calls under DynamoDB's conflict rule\n\n")
	st, err := StartStore()
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	r, err := Contention(ctx, st, o.ContentionDuration, o.Bursts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "No emulator models DynamoDB's transaction conflicts, so the store is reached through the fault proxy applying the documented rule (`dynamotest.Conflicts`: a transaction holds every item it includes, a `ConditionCheck`'s too, for %s, and cancels any other that includes one; a plain write of a held item is refused). Created calls go through the local HTTP path behind the nonce check (an Authenticator that accepts every call: BCrypt's cost is per core, not per user, and would hide the store), distinct operations, for %s per load in %d windows, the two loads taking turns, each first in every other pair: one user's callers, and the same number spread over %d users. No call's transaction includes an item another call's does (the user's record is read before it, never checked in it), so the one user's calls cancel none of each other's: the last column counts the transactions the rule cancelled.\n\n",
		contentionHold, o.ContentionDuration, contentionWindows, contentionUsers)
	w.WriteString("| Callers | One user: creates/s | busy | Spread: creates/s | busy | One ÷ spread | Transactions cancelled (one, spread) |\n|---:|---:|---:|---:|---:|---:|---|\n")
	worst, worstBusy := 0.0, 0.0
	for i, p := range r.Runs {
		ratio := p[0].Rate() / p[1].Rate()
		if i == 0 || ratio < worst {
			worst = ratio
		}
		worstBusy = max(worstBusy, p[0].BusyRate(), p[1].BusyRate())
		fmt.Fprintf(w, "| %d | %s | %s%% | %s | %s%% | **%s** | %d, %d |\n", p[0].Callers, ftoa(p[0].Rate(), 0), ftoa(100*p[0].BusyRate(), 2),
			ftoa(p[1].Rate(), 0), ftoa(100*p[1].BusyRate(), 2), ftoa(ratio, 3), p[0].Cancelled, p[1].Cancelled)
	}
	fmt.Fprintf(w, "\nThe seed's burst, through two services of one store (each its own store client, as two containers), real cost-%d nonces: ten identical calls at once, %d times: **%d of %d** ended 1 created and 9 deduplicated; %d answers busy in all.\n\n",
		AIVAXCost, r.BurstRuns, r.BurstClean, r.BurstRuns, r.BurstBusy)
	target(w, "one user's creates/s ÷ spread over 256 users, worst of 16/64/256 callers", ftoa(worst, 3), "≥ 0.95", worst >= 0.95)
	target(w, "busy answers under the conflict rule, worst run", ftoa(100*worstBusy, 2)+"%", "0", worstBusy == 0)
	target(w, "the seed's burst: 1 created + 9 deduplicated, 0 busy", fmt.Sprintf("%d of %d", r.BurstClean, r.BurstRuns), "every run", r.BurstClean == r.BurstRuns && r.BurstBusy == 0)
	return nil
}
