package perf

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/testing/logtest"
)

// PeerTable is the table the Powertools peer uses, beside oncecall's.
const PeerTable = "peer-powertools"

// replayed is how many operations the replay phase cycles through.
const replayed = 20

// side is one system under the same load.
type side struct {
	name, url, table string

	created, replays Durations
	createdOps       map[string]int64
	replayOps        map[string]int64
	calls            atomic.Int64
	callTime         time.Duration
	// storeBusy is the store's own time serving this side's requests
	// during the single-client created calls.
	storeBusy time.Duration
}

// PeerResult is the side-by-side run.
type PeerResult struct {
	Oncecall, Powertools *side
	Clients              int
	Samples              int
}

func nodeVersion() string {
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return "not found"
	}
	return strings.TrimSpace(string(out))
}

// startPeer starts the Powertools peer with node and returns its URL.
func startPeer(dir, storeURL string) (string, func(), error) {
	if _, err := exec.LookPath("node"); err != nil {
		return "", nil, fmt.Errorf("node is not installed: %w", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@aws-lambda-powertools", "idempotency")); err != nil {
		return "", nil, fmt.Errorf("the peer's packages are not installed (run `npm ci` in %s, as `make bench` does): %w", dir, err)
	}
	cmd := exec.Command("node", "server.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "DYNAMODB_ENDPOINT="+storeURL, "TABLE_NAME="+PeerTable, "AWS_EC2_METADATA_DISABLED=true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var errs logtest.Buffer
	cmd.Stderr = &errs
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop := func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	lines := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(out).ReadString('\n')
		lines <- strings.TrimSpace(l)
		_, _ = bufio.NewReader(out).WriteTo(discard{})
	}()
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "http://127.0.0.1:") {
			stop()
			return "", nil, fmt.Errorf("the peer did not start: %q %s", l, errs.String())
		}
		return l, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, errors.New("the peer did not start within 30 s: " + errs.String())
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// Peer runs oncecall and the Powertools peer against one store, with the
// same callbacks, alternating between them: single-client created calls and
// replays, then clients concurrent clients in alternating windows.
func Peer(ctx context.Context, o Options) (PeerResult, error) {
	r := PeerResult{Clients: o.Clients, Samples: o.PeerSamples}
	st, err := StartStore()
	if err != nil {
		return r, err
	}
	defer func() { _ = st.Close() }()
	admin := st.Client()
	if _, err := dynamo.EnsureTable(ctx, admin, PeerTable); err != nil {
		return r, err
	}
	if _, err := localdb.SeedDemo(ctx, dynamo.New(admin, PeerTable)); err != nil {
		return r, err
	}
	peerURL, stop, err := startPeer(o.PeerDir, st.URL)
	if err != nil {
		return r, err
	}
	defer stop()
	svc, err := StartService(ctx, st.URL, "oncecall-peer-run")
	if err != nil {
		return r, err
	}
	defer func() { _ = svc.Close() }()
	svc.Handler.Verifier = NoNonceCheck{} // left out of both sides

	r.Oncecall = &side{name: "oncecall", url: svc.URL, table: svc.Table}
	r.Powertools = &side{name: "Powertools", url: peerURL, table: PeerTable}
	sides := []*side{r.Oncecall, r.Powertools}
	client := NewClient(UncheckedNonce)
	defer client.Close()

	// Both answer the same callbacks the same way before anything is timed.
	if err := sameAnswers(client, sides); err != nil {
		return r, err
	}
	// Warm up both: connections, caches, the JIT.
	for i := range 50 {
		for _, s := range sides {
			rid := "warm-" + strconv.Itoa(i)
			if _, err := client.Expect(s.url, CreateBody("user-a", rid), "created"); err != nil {
				return r, err
			}
			if _, err := client.Expect(s.url, CreateBody("user-a", rid), "deduplicated"); err != nil {
				return r, err
			}
		}
	}
	prune := func() error {
		for _, s := range sides {
			if err := st.Prune(ctx, s.table); err != nil {
				return err
			}
		}
		return nil
	}
	// Single client, alternating which side goes first.
	phase := func(kind string, body func(i int) []byte, into func(*side) *Durations, ops func(*side) *map[string]int64) error {
		if err := prune(); err != nil {
			return err
		}
		if kind == "deduplicated" {
			for j := range replayed {
				for _, s := range sides {
					if _, err := client.Expect(s.url, body(j), "created"); err != nil {
						return err
					}
				}
			}
		}
		before := st.Front.Counts()
		busy := st.Front.Busy()
		defer func() {
			if kind == "created" {
				after := st.Front.Busy()
				for _, s := range sides {
					s.storeBusy = after[s.table] - busy[s.table]
				}
			}
		}()
		for i := range o.PeerSamples {
			if kind == "created" && i > 0 && i%50 == 0 {
				// Between samples: keep the tables small (see Store.Prune).
				if err := prune(); err != nil {
					return err
				}
			}
			order := sides
			if i%2 == 1 {
				order = []*side{sides[1], sides[0]}
			}
			for _, s := range order {
				d, err := client.Expect(s.url, body(i), kind)
				if err != nil {
					return err
				}
				*into(s) = append(*into(s), d)
			}
		}
		after := st.Front.Counts()
		for _, s := range sides {
			*ops(s) = after.Since(before, s.table)
		}
		return nil
	}
	if err := phase("created", func(i int) []byte { return CreateBody("user-a", "peer-c-"+strconv.Itoa(i)) },
		func(s *side) *Durations { return &s.created }, func(s *side) *map[string]int64 { return &s.createdOps }); err != nil {
		return r, err
	}
	if err := phase("deduplicated", func(i int) []byte { return CreateBody("user-a", "peer-r-"+strconv.Itoa(i%replayed)) },
		func(s *side) *Durations { return &s.replays }, func(s *side) *map[string]int64 { return &s.replayOps }); err != nil {
		return r, err
	}

	// Concurrent clients: each side gets short windows, taking turns, with
	// the tables pruned before each.
	const rounds = 10
	window := o.Duration / rounds
	for round := range rounds {
		order := sides
		if round%2 == 1 {
			order = []*side{sides[1], sides[0]}
		}
		for _, s := range order {
			if err := prune(); err != nil {
				return r, err
			}
			var wg sync.WaitGroup
			var firstErr error
			var once sync.Once
			start := time.Now()
			deadline := start.Add(window)
			for c := range o.Clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; time.Now().Before(deadline) && ctx.Err() == nil; i++ {
						rid := fmt.Sprintf("peer-t-%d-%d-%d", round, c, i)
						if _, err := client.Expect(s.url, CreateBody("user-a", rid), "created"); err != nil {
							once.Do(func() { firstErr = err })
							return
						}
						s.calls.Add(1)
					}
				}()
			}
			wg.Wait()
			s.callTime += time.Since(start)
			if firstErr != nil {
				return r, firstErr
			}
		}
	}
	return r, nil
}

func (s *side) rate() float64 { return float64(s.calls.Load()) / s.callTime.Seconds() }

func peerPart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## The peer, side by side: Powertools for AWS Lambda (TypeScript)\n\n")
	r, err := Peer(ctx, o)
	if err != nil {
		return err
	}
	oc, pt := r.Oncecall, r.Powertools
	fmt.Fprintf(w, "The same create_ticket semantics on `@aws-lambda-powertools/idempotency` 2.35.0 with its `DynamoDBPersistenceLayer` (AWS SDK v3 `@aws-sdk/client-dynamodb` 3.1162.0 with an endpoint override) in `internal/bench/peers/server.mjs`, served by Node %s over loopback HTTP, against the same embedded store as oncecall (separate tables, one server). Both get the same AIVAX callbacks from the same client, alternating, and first answer the same nine checks alike (created, deduplicated, request_id_conflict, another tenant's own operation, disabled user, function not granted, unknown user, invalid arguments, missing request_id); nonce verification is left out of both (oncecall's handler is given an Authenticator that accepts every call). Store requests are counted at the store side by a counting front before the store, per table, for both alike; the front returns the old item with a failed condition, as DynamoDB does, for both. Single-client: %d created calls and %d replays per side; throughput: %d clients, %s per side in 10 windows taking turns.\n\n",
		nodeVersion(), len(oc.created), len(oc.replays), r.Clients, o.Duration)
	w.WriteString("| | Store requests per created call | Store requests per replay | Created p50 | Created p99 | Replay p50 | Replay p99 | Created calls/s (concurrent) | Guarantees |\n|---|---|---|---:|---:|---:|---:|---:|---|\n")
	fmt.Fprintf(w, "| oncecall | %s | %s | %s | %s | %s | %s | %s | The user's record read on every call (a strongly consistent GetItem, beside the nonce's BCrypt, which this comparison leaves out), then claim and ticket in one TransactWriteItems: the effect and the idempotency record commit together or not at all; a user disabled is refused by the next call, and no call that read the earlier record commits or answers a stored result once oncecall-admin returns. |\n",
		Describe(oc.createdOps, len(oc.created)), Describe(oc.replayOps, len(oc.replays)), ms(oc.created.P50()), ms(oc.created.P99()), ms(oc.replays.P50()), ms(oc.replays.P99()), ftoa(oc.rate(), 1))
	fmt.Fprintf(w, "| Powertools | %s | %s | %s | %s | %s | %s | %s | Not atomic: the INPROGRESS record (PutItem), the handler's ticket (PutItem) and the COMPLETED record (UpdateItem) are separate writes; a crash after the ticket and before the update leaves an INPROGRESS record that expires and lets the call run again (a second ticket); the user is checked from the cache only. |\n",
		Describe(pt.createdOps, len(pt.created)), Describe(pt.replayOps, len(pt.replays)), ms(pt.created.P50()), ms(pt.created.P99()), ms(pt.replays.P50()), ms(pt.replays.P99()), ftoa(pt.rate(), 1))
	fmt.Fprintf(w, "| **oncecall ÷ Powertools** | %s | %s | **%s** | **%s** | **%s** | **%s** | **%s** | |\n\n",
		ratio(float64(Total(oc.createdOps))/float64(len(oc.created)), float64(Total(pt.createdOps))/float64(len(pt.created))),
		ratio(float64(Total(oc.replayOps))/float64(len(oc.replays)), float64(Total(pt.replayOps))/float64(len(pt.replays))),
		ratio(float64(oc.created.P50()), float64(pt.created.P50())), ratio(float64(oc.created.P99()), float64(pt.created.P99())),
		ratio(float64(oc.replays.P50()), float64(pt.replays.P50())), ratio(float64(oc.replays.P99()), float64(pt.replays.P99())),
		ratio(oc.rate(), pt.rate()))
	perCall := func(s *side) time.Duration { return s.storeBusy / time.Duration(max(1, len(s.created))) }
	outside := func(s *side) time.Duration { return s.created.Mean() - perCall(s) }
	fmt.Fprintf(w, "Time the store itself spent per single-client created call (measured around its handler, at the store side): oncecall %s, Powertools %s; mean latency outside the store, which is each side's own machinery (HTTP, handler, SDK, idempotency logic): oncecall %s, Powertools %s (ratio %s). The local store (dynoxide) serializes every request in one process, which DynamoDB does not; both tables are still pruned back to their user records between samples, as in earlier runs, so that both sides meet tables of the same size (every 50 created calls, before each phase and each throughput window; never during a timed call), and the replays cycle over %d operations of each side.\n\n",
		ms(perCall(oc)), ms(perCall(pt)), ms(outside(oc)), ms(outside(pt)), ratio(float64(outside(oc)), float64(outside(pt))), replayed)
	w.WriteString("Latency ratios below 1 and a calls/s ratio above 1 favour oncecall. Node runs JavaScript on one thread, oncecall's handler on both cores; in the concurrent windows the client, both servers and the store (which serves one request at a time) share the same two cores, which on AWS they would not. Under Lambda each container serves one call at a time, where the single-client columns are the ones that matter. Powertools' `useLocalCache` (off by default, and off here) would answer some replays from the container's memory without a store request.\n\n")
	// Two each: the user's record and the transaction (one, the
	// transaction, while a container cached user records and checked a
	// copy of the grant inside it).
	target(w, "store requests per created call, oncecall (Powertools)", fmt.Sprintf("%s (%s)", ftoa(float64(Total(oc.createdOps))/float64(len(oc.created)), 2), ftoa(float64(Total(pt.createdOps))/float64(len(pt.created)), 2)), "2: read and transaction (1 before)", Total(oc.createdOps) == 2*int64(len(oc.created)))
	target(w, "store requests per replay, oncecall (Powertools)", fmt.Sprintf("%s (%s)", ftoa(float64(Total(oc.replayOps))/float64(len(oc.replays)), 2), ftoa(float64(Total(pt.replayOps))/float64(len(pt.replays)), 2)), "2: read and transaction (1 before)", Total(oc.replayOps) == 2*int64(len(oc.replays)))
	return nil
}

// sameAnswers sends the same callbacks to every side and checks the kind
// of answer each gives: the semantics compared are the same.
func sameAnswers(c *Client, sides []*side) error {
	steps := []struct {
		body []byte
		kind string
	}{
		{CreateBody("user-a", "same-1"), "created"},
		{CreateBody("user-a", "same-1"), "deduplicated"},
		{CreateBody("user-b", "same-1"), "request_id_conflict"},
		{CreateBody("user-c", "same-1"), "created"},
		{CreateBody("user-d", "same-2"), "user_disabled"},
		{CreateBody("user-e", "same-2"), "function_not_granted"},
		{CreateBody("mallory", "same-2"), "unknown_user"},
		{[]byte(strings.Replace(string(CreateBody("user-a", "same-3")), `"priority":"high"`, `"priority":"asap"`, 1)), "invalid_arguments"},
		{[]byte(strings.Replace(string(CreateBody("user-a", "same-3")), `"request_id":"same-3"`, `"other":"x"`, 1)), "missing_request_id"},
	}
	for _, s := range sides {
		for i, st := range steps {
			if _, err := c.Expect(s.url, st.body, st.kind); err != nil {
				return fmt.Errorf("%s, check %d: %w", s.name, i+1, err)
			}
		}
	}
	return nil
}
