package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/oncecall/oncecall/internal/protocol"
)

// Result is what one call got.
type Result struct {
	// Op is the call's operation ("" for calls that create nothing).
	Op string `json:"op,omitempty"`
	// Status is the HTTP status; 0 when no answer arrived.
	Status int `json:"status"`
	// Outcome is the answer's status member, or "deduplicated" for a replay
	// of a created ticket.
	Outcome  string `json:"outcome,omitempty"`
	Code     string `json:"code,omitempty"`
	TicketID string `json:"ticket_id,omitempty"`
	// Err is the transport error, when no answer arrived.
	Err string `json:"err,omitempty"`
	// Busy counts the busy answers Run got, and sent the call again after,
	// before this one.
	Busy int `json:"busy,omitempty"`
}

// Busy answers are retried as the application behind AIVAX would retry
// them (oncecall's "retryable": bounded retries stay in the application).
// DynamoDB cancels a transaction that includes an item another ongoing
// transaction includes (TransactionConflict): concurrent calls of one
// operation, and of one user, whose record every write checks. oncecall
// answers busy once its own attempts are spent; the embedded store
// serializes everything and never does.
const (
	// BusyRetries bounds how often Run sends a call again after a busy
	// answer.
	BusyRetries = 10
	// BusyBackoff bounds the first randomized wait before such a retry;
	// each later one doubles it, up to MaxBusyBackoff.
	BusyBackoff    = 20 * time.Millisecond
	MaxBusyBackoff = time.Second
)

// CallTimeout bounds one call, so that a run always ends.
const CallTimeout = 30 * time.Second

// NewClient returns an HTTP client that keeps a connection per worker.
func NewClient(concurrency int) *http.Client {
	return &http.Client{Timeout: CallTimeout, Transport: &http.Transport{
		MaxIdleConns: concurrency, MaxIdleConnsPerHost: concurrency, IdleConnTimeout: 30 * time.Second,
	}}
}

// Run sends calls to url with concurrency workers, the nonces used in turn,
// and returns the results in call order. It stops sending when ctx ends.
func Run(ctx context.Context, client *http.Client, url string, nonces []string, calls []Call, concurrency int) []Result {
	return RunSpread(ctx, client, []string{url}, nonces, calls, concurrency)
}

// RunSpread is Run over several servers of one store: call i goes to
// urls[i%len(urls)], as calls of one operation reach different containers.
func RunSpread(ctx context.Context, client *http.Client, urls []string, nonces []string, calls []Call, concurrency int) []Result {
	results := make([]Result, len(calls))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(concurrency, 1) {
		wg.Go(func() {
			for i := range next {
				results[i] = doRetryingBusy(ctx, client, urls[i%len(urls)], nonces[i%len(nonces)], calls[i])
			}
		})
	}
feed:
	for i := range calls {
		select {
		case next <- i:
		case <-ctx.Done():
			for j := i; j < len(calls); j++ {
				results[j] = Result{Op: calls[j].Op, Err: "not sent: " + ctx.Err().Error()}
			}
			break feed
		}
	}
	close(next)
	wg.Wait()
	return results
}

// doRetryingBusy sends c, and again after a busy answer, up to BusyRetries
// times with randomized waits that double up to MaxBusyBackoff.
func doRetryingBusy(ctx context.Context, client *http.Client, url, nonce string, c Call) Result {
	r := Do(ctx, client, url, nonce, c)
	for busy := 0; r.Outcome == "busy" && busy < BusyRetries; busy++ {
		t := time.NewTimer(time.Duration(rand.Int64N(int64(min(BusyBackoff<<busy, MaxBusyBackoff)))))
		select {
		case <-ctx.Done():
			t.Stop()
			r.Busy = busy
			return r
		case <-t.C:
		}
		r = Do(ctx, client, url, nonce, c)
		r.Busy = busy + 1
	}
	return r
}

// Do sends one call.
func Do(ctx context.Context, client *http.Client, url, nonce string, c Call) Result {
	r := Result{Op: c.Op}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(c.Body))
	if err != nil {
		r.Err = err.Error()
		return r
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(protocol.NonceHeader, nonce)
	res, err := client.Do(req)
	if err != nil {
		r.Err = err.Error()
		return r
	}
	defer func() { _ = res.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	r.Status = res.StatusCode
	if err != nil {
		r.Err = err.Error()
		return r
	}
	var a struct {
		Status       string `json:"status"`
		TicketID     string `json:"ticket_id"`
		Deduplicated bool   `json:"deduplicated"`
		Error        struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		r.Err = "answer is not JSON"
		return r
	}
	r.Outcome, r.TicketID, r.Code = a.Status, a.TicketID, a.Error.Code
	if a.Status == "created" && a.Deduplicated {
		r.Outcome = "deduplicated"
	}
	return r
}
