package perf

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// The edge run's rules, as template.yaml deploys them and scaled down in
// time so that a bounded run shows them: API Gateway's stage throttle
// (ApiRateLimit 50/s, ApiBurstLimit 100) before the callback's slots, and
// in front of it the edge's per-source rule (AWS WAF's rate-based rule,
// EdgeRateLimit requests per 5 minutes per source IP) as EdgeSourceLimit
// requests per EdgeWindow: 8 a second, above the legitimate client's
// pace (EdgeLegitEvery, 5 a second), as EdgeRateLimit must be above
// AIVAX's own rate from one address, and within what this machine's
// cores verify alongside the legitimate calls.
const (
	EdgeStageRate   = 50
	EdgeStageBurst  = 100
	EdgeSourceLimit = 80
	EdgeWindow      = 10 * time.Second
	EdgeLegitEvery  = 200 * time.Millisecond
)

// sourceHeader names, on loopback where every client has one address,
// the source address the edge's rule counts by (CloudFront's viewer IP).
// legitSource and floodSource are AIVAX's and the flood's.
const (
	sourceHeader = "X-Bench-Source"
	legitSource  = "203.0.113.10"
	floodSource  = "198.51.100.66"
)

// edgeBlockHeader marks the edge's own refusal (a 403 like the
// callback's invalid_nonce, told apart by it); floodRun reports such an
// answer as statusEdgeBlocked.
const (
	edgeBlockHeader   = "X-Bench-Edge-Blocked"
	statusEdgeBlocked = 1403
)

// stageThrottle is API Gateway's stage throttle: a token bucket of burst
// tokens refilled at rate a second, shared by every caller; a request that
// finds it empty is answered 429 and never reaches the function.
func stageThrottle(rate, burst float64) func(http.Handler) http.Handler {
	var mu sync.Mutex
	tokens, last := burst, time.Now()
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			now := time.Now()
			tokens = min(burst, tokens+now.Sub(last).Seconds()*rate)
			last = now
			ok := tokens >= 1
			if ok {
				tokens--
			}
			mu.Unlock()
			if !ok {
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
}

// edgeProxy is the edge: it counts each source's requests over the last
// window, those it blocked included, and blocks (403, as WAF's Block
// answers) a source while that count is over limit; the others are
// forwarded to the origin, over TLS with originTLS when it is set (the
// client certificate of origin mutual TLS). It acts from the first
// request over the limit; AWS WAF takes some seconds to act on a rate it
// has counted, which this does not model.
type edgeProxy struct {
	URL   string
	srv   *http.Server
	limit int
	win   time.Duration

	mu   sync.Mutex
	seen map[string][]time.Time // per source, oldest first, within win
}

func startEdge(origin string, originTLS *tls.Config, limit int, window time.Duration) (*edgeProxy, error) {
	u, err := url.Parse(origin)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	e := &edgeProxy{URL: "http://" + ln.Addr().String() + u.Path, limit: limit, win: window, seen: map[string][]time.Time{}}
	fwd := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	if originTLS != nil {
		fwd.Transport = &http.Transport{TLSClientConfig: originTLS, MaxIdleConnsPerHost: FloodClients}
	}
	e.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !e.allow(r.Header.Get(sourceHeader)) {
			w.Header().Set(edgeBlockHeader, "1")
			w.WriteHeader(http.StatusForbidden)
			return
		}
		fwd.ServeHTTP(w, r)
	})}
	go func() { _ = e.srv.Serve(ln) }()
	return e, nil
}

func (e *edgeProxy) allow(source string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := time.Now()
	seen := e.seen[source]
	drop := 0
	for drop < len(seen) && now.Sub(seen[drop]) >= e.win {
		drop++
	}
	seen = append(seen[drop:], now)
	e.seen[source] = seen
	return len(seen) <= e.limit
}

func (e *edgeProxy) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = e.srv.Shutdown(ctx)
}

// edgePart measures what a flood from one source does to AIVAX's calls
// with the deployed rules in front: the stage throttle alone, the edge's
// per-source rule before it, and a flood sent around the edge to the API
// custom domain's regional endpoint, which requires the edge's client
// certificate (mutual TLS).
func edgePart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## A flood from one source: legitimate calls with and without the edge\n\n")
	st, err := StartStore()
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	var out []FloodScenario
	for _, s := range []floodSetup{
		{name: "no flood, stage throttle", stage: true},
		{name: "cost-9 flood from one source, stage throttle only (Edge=none)", stage: true, flood: true},
		{name: "cost-9 flood from one source through the edge (Edge=cloudfront)", stage: true, flood: true, edge: true},
		{name: "cost-9 flood sent around the edge, to the API's regional endpoint (refused in the TLS handshake: no client certificate)", stage: true, flood: true, edge: true, bypass: true},
	} {
		s.maxCost, s.forgedCost, s.legitEvery = AIVAXCost, AIVAXCost, EdgeLegitEvery
		sc, err := floodRun(ctx, st, s, o.FloodSamples)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		out = append(out, sc)
	}
	fmt.Fprintf(w, "The flood run's service (%d slots) behind API Gateway's stage throttle as deployed (a token bucket of %d, refilled %d a second, shared by every caller; 429 beyond it). With the edge, a proxy in front applies the WAF rule per source address, scaled in time: %d requests per %s per source, then 403 while its count over the last window, blocked requests included, stays over that; like EdgeRateLimit, it must be above the legitimate source's own rate (AWS WAF also takes some seconds to start blocking, which the proxy does not model). Behind the edge, the API custom domain's regional endpoint is a TLS listener that requires a client certificate of a certificate authority made for the run, as mutual TLS with EdgeTruststoreUri does; the edge presents one (origin mutual TLS, EdgeClientCertificateArn), a caller around the edge has none and its handshake is refused before the stage throttle (AWS does not document whether a refused handshake counts against the throttle: this models that it does not, as it carries no request). One legitimate client (its own source) sends %d created calls, one every %s (or as soon as the last is answered, if later); %d clients from one other source send well-formed cost-%d nonces of a wrong key, each a BCrypt verification if it reaches the function, as fast as they are answered or refused.\n\n",
		FloodSlots, EdgeStageBurst, EdgeStageRate, EdgeSourceLimit, EdgeWindow, o.FloodSamples, EdgeLegitEvery, FloodClients, AIVAXCost)
	w.WriteString("| Scenario | legitimate calls created | p50 | p99 | forged requests answered/s | of them throttled (429) or blocked by the edge (403) | forged connections refused in the TLS handshake/s |\n|---|---:|---:|---:|---:|---:|---:|\n")
	for _, sc := range out {
		rate, thr, refused := "-", "-", "-"
		if sc.Flood && sc.FloodTime > 0 {
			rate = ftoa(float64(sc.FloodAnswered)/sc.FloodTime.Seconds(), 0)
			if sc.FloodAnswered > 0 {
				thr = ftoa(100*float64(sc.FloodThrottled)/float64(sc.FloodAnswered), 1) + " %"
			}
			refused = ftoa(float64(sc.FloodRefused)/sc.FloodTime.Seconds(), 0)
		}
		fmt.Fprintf(w, "| %s | %d of %d | %s | %s | %s | %s | %s |\n", sc.Name, len(sc.Calls), sc.Sent, ms(sc.Calls.P50()), ms(sc.Calls.P99()), rate, thr, refused)
	}
	w.WriteString("\n")
	edged, around := out[2], out[3]
	target(w, "legitimate calls created under a one-source cost-9 flood through the edge", fmt.Sprintf("%d of %d", len(edged.Calls), edged.Sent), "at least 90 %", 10*len(edged.Calls) >= 9*edged.Sent)
	target(w, "legitimate calls created under a one-source cost-9 flood sent around the edge", fmt.Sprintf("%d of %d", len(around.Calls), around.Sent), "at least 90 %", 10*len(around.Calls) >= 9*around.Sent)
	return nil
}
