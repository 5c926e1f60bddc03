package perf

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
)

// floodTable is the flood run's table.
const floodTable = "oncecall-flood"

// FloodSlots is how many calls the flood run's service handles at once,
// as Lambda runs the callback with its default ReservedConcurrency (10):
// a call that finds every slot busy is throttled (429) at once.
const FloodSlots = 10

// FloodClients is how many forged-nonce clients the flood run starts,
// each sending its next request as soon as the last is answered.
const FloodClients = 20

// FloodCost is the cost of the flood's nonces: one above AIVAX's, well
// formed, of a wrong key.
const FloodCost = 10

// FloodScenario is one legitimate client's calls while a flood runs, or
// none.
type FloodScenario struct {
	// Name says what runs; MaxCost is the service's NONCE_MAX_COST;
	// Flood whether the forged-nonce clients run.
	Name    string
	MaxCost int
	Flood   bool
	// Calls are the created calls' timings; Failed counts the others
	// (throttled, refused, an error), of Sent.
	Calls        Durations
	Failed, Sent int
	// FloodAnswered is how many forged requests were answered, and
	// FloodThrottled how many of them throttled (429) or blocked by the
	// edge (403), over FloodTime; FloodRefused how many forged connections
	// the API's regional endpoint refused in the TLS handshake.
	FloodAnswered, FloodThrottled, FloodRefused int64
	FloodTime                                   time.Duration
}

// slotLimit is a handler's limit of concurrent calls, as reserved
// concurrency is Lambda's: a call beyond it is throttled, never queued.
func slotLimit(n int) func(http.Handler) http.Handler {
	slots := make(chan struct{}, n)
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case slots <- struct{}{}:
				defer func() { <-slots }()
				h.ServeHTTP(w, r)
			default:
				w.WriteHeader(http.StatusTooManyRequests)
			}
		})
	}
}

// Flood runs one scenario: a service of FloodSlots slots at maxCost, n
// legitimate created calls one after another (AIVAX's cost, the right
// key) and, with flood, FloodClients clients sending cost-FloodCost nonces
// of a wrong key all the while.
func Flood(ctx context.Context, st *Store, name string, maxCost int, flood bool, n int) (FloodScenario, error) {
	return floodRun(ctx, st, floodSetup{name: name, maxCost: maxCost, flood: flood, forgedCost: FloodCost}, n)
}

// floodSetup is what a flood scenario runs: the service's NONCE_MAX_COST,
// whether and at which cost the forged-nonce clients run, and what stands
// in front of the service (EdgeRun's rules).
type floodSetup struct {
	name                string
	maxCost, forgedCost int
	flood               bool
	// stage applies API Gateway's stage throttle before the slots; edge
	// puts the edge's per-source rule in front of the legitimate calls
	// and, unless bypass, of the flood's, and between the edge and the
	// stage the API custom domain's regional endpoint, which requires the
	// edge's client certificate (mutual TLS): with bypass the flood is
	// sent there without one.
	stage, edge, bypass bool
	// legitEvery paces the legitimate calls (0: one as soon as the last
	// is answered).
	legitEvery time.Duration
}

func floodRun(ctx context.Context, st *Store, fs floodSetup, n int) (FloodScenario, error) {
	sc := FloodScenario{Name: fs.name, MaxCost: fs.maxCost, Flood: fs.flood}
	cfg := serviceConfig(st.URL, floodTable)
	cfg.NonceMaxCost = fs.maxCost
	wrap := slotLimit(FloodSlots)
	if fs.stage {
		wrap = func(h http.Handler) http.Handler {
			return stageThrottle(EdgeStageRate, EdgeStageBurst)(slotLimit(FloodSlots)(h))
		}
	}
	svc, err := startWrappedService(ctx, cfg, nil, wrap)
	if err != nil {
		return sc, err
	}
	defer func() { _ = svc.Close() }()
	legitURL, floodURL := svc.URL, svc.URL
	floodTransport := &http.Transport{MaxIdleConnsPerHost: FloodClients}
	if fs.edge {
		origin, err := startOrigin(svc.URL)
		if err != nil {
			return sc, err
		}
		defer origin.Close()
		edge, err := startEdge(origin.URL, origin.Client, EdgeSourceLimit, EdgeWindow)
		if err != nil {
			return sc, err
		}
		defer edge.Close()
		legitURL, floodURL = edge.URL, edge.URL
		if fs.bypass {
			floodURL, floodTransport.TLSClientConfig = origin.URL, origin.Stranger
		}
	}
	good, err := nonce.Generate(localdb.DemoHookKey, AIVAXCost)
	if err != nil {
		return sc, err
	}
	forged, err := nonce.Generate("not-the-hook-key-of-this-account", fs.forgedCost)
	if err != nil {
		return sc, err
	}
	post := func(client *http.Client, body []byte, hash string) (int, error) {
		url, source := legitURL, legitSource
		if hash == forged {
			url, source = floodURL, floodSource
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		req.Header.Set(sourceHeader, source)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Nonce", hash)
		res, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		raw, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.Header.Get(edgeBlockHeader) != "" {
			return statusEdgeBlocked, nil
		}
		if res.StatusCode == http.StatusOK && !bytes.Contains(raw, []byte(`"created"`)) {
			return res.StatusCode, fmt.Errorf("answered %s", raw)
		}
		return res.StatusCode, nil
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var answered, throttled, refused atomic.Int64
	floodClient := &http.Client{Timeout: 30 * time.Second, Transport: floodTransport}
	defer floodClient.CloseIdleConnections()
	floodStart := time.Now()
	if fs.flood {
		for i := range FloodClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; ; j++ {
					select {
					case <-stop:
						return
					default:
					}
					code, err := post(floodClient, CreateBody("user-a", fmt.Sprintf("flood-%d-%d", i, j)), forged)
					if refusedInHandshake(err) {
						refused.Add(1)
						continue
					}
					if err != nil {
						continue
					}
					answered.Add(1)
					if code == http.StatusTooManyRequests || code == statusEdgeBlocked {
						throttled.Add(1)
					}
				}
			}()
		}
		// Let the flood fill the slots before the first legitimate call.
		time.Sleep(500 * time.Millisecond)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	run := time.Now().UnixNano()
	var callErr error
	paced := time.Now()
	for i := range n {
		if fs.legitEvery > 0 {
			time.Sleep(time.Until(paced.Add(time.Duration(i) * fs.legitEvery)))
		}
		start := time.Now()
		code, err := post(client, CreateBody("user-a", fmt.Sprintf("legit-%d-%d", run, i)), good)
		d := time.Since(start)
		sc.Sent++
		if err != nil && code == 0 {
			callErr = err
			break
		}
		if code == http.StatusOK && err == nil {
			sc.Calls = append(sc.Calls, d)
		} else {
			sc.Failed++
		}
	}
	close(stop)
	wg.Wait()
	sc.FloodTime = time.Since(floodStart)
	sc.FloodAnswered, sc.FloodThrottled, sc.FloodRefused = answered.Load(), throttled.Load(), refused.Load()
	if err := st.Prune(ctx, floodTable); err != nil && callErr == nil {
		callErr = err
	}
	return sc, callErr
}

func floodPart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## A flood of well-formed nonces: legitimate calls with and without the cost pre-check\n\n")
	st, err := StartStore()
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	var out []FloodScenario
	for _, s := range []struct {
		name    string
		maxCost int
		flood   bool
	}{
		{"no flood, NONCE_MAX_COST 9", AIVAXCost, false},
		{"cost-10 flood, NONCE_MAX_COST 9 (refused before BCrypt)", AIVAXCost, true},
		{"cost-10 flood, NONCE_MAX_COST 10 (BCrypt for each)", FloodCost, true},
	} {
		sc, err := Flood(ctx, st, s.name, s.maxCost, s.flood, o.FloodSamples)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		out = append(out, sc)
	}
	fmt.Fprintf(w, "One local service (`httpapi`) over one store, limited to %d calls at once as Lambda's default ReservedConcurrency limits the callback (a call beyond them is throttled at once, never queued). One legitimate client sends %d created `create_ticket` calls one after another with AIVAX's cost-%d nonce; meanwhile %d clients send well-formed cost-%d nonces of a wrong key as fast as they are answered. On this machine the flood's BCrypt work also takes CPU from the legitimate calls, which on Lambda each environment has to itself.\n\n",
		FloodSlots, o.FloodSamples, AIVAXCost, FloodClients, FloodCost)
	w.WriteString("| Scenario | legitimate calls created | p50 | p99 | p50 ÷ no flood | forged requests answered/s | of them throttled |\n|---|---:|---:|---:|---:|---:|---:|\n")
	base := out[0].Calls.P50()
	for _, sc := range out {
		ratio := "-"
		if base > 0 && len(sc.Calls) > 0 {
			ratio = ftoa(float64(sc.Calls.P50())/float64(base), 2)
		}
		rate, thr := "-", "-"
		if sc.Flood && sc.FloodTime > 0 {
			rate = ftoa(float64(sc.FloodAnswered)/sc.FloodTime.Seconds(), 0)
			if sc.FloodAnswered > 0 {
				thr = ftoa(100*float64(sc.FloodThrottled)/float64(sc.FloodAnswered), 1) + " %"
			}
		}
		fmt.Fprintf(w, "| %s | %d of %d | %s | %s | %s | %s | %s |\n", sc.Name, len(sc.Calls), sc.Sent, ms(sc.Calls.P50()), ms(sc.Calls.P99()), ratio, rate, thr)
	}
	w.WriteString("\n")
	ok := out[1].Failed == 0
	target(w, "legitimate calls created under a cost-10 flood at NONCE_MAX_COST 9", fmt.Sprintf("%d of %d", len(out[1].Calls), out[1].Sent), "all", ok)
	return nil
}
