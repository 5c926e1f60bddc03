package perf

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// goCmd is the go command to run benchmarks and builds with.
func goCmd() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// benchLine is one parsed `go test -bench` result line.
type benchLine struct {
	ns, cpu, bytes, allocs float64
	// ratio is BenchmarkUnauthenticated's ratio-to-bcrypt9.
	ratio float64
}

func goBenchmarks(ctx context.Context, _ Options, w *strings.Builder) error {
	w.WriteString("## Go benchmarks: the handler's own overhead\n\n")
	args := []string{"test", "-run", "^$", "-bench", "^Benchmark(Overhead|OverheadWithSDK|VerifyCost9|RefuseCost31|Unauthenticated)$", "-benchmem", "-count", "5", "-benchtime", "1s",
		"./internal/callback/", "./internal/nonce/", "./internal/mcp/"}
	fmt.Fprintf(w, "`go %s` (median of 5 runs each):\n\n", strings.Join(args, " "))
	ctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goCmd(), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go test -bench: %w: %s", err, strings.TrimSpace(errb.String()+out.String()))
	}
	results := map[string][]benchLine{}
	var order []string
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 8 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := f[0]
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i]
		}
		var l benchLine
		for i := 2; i+1 < len(f); i += 2 {
			v, _ := strconv.ParseFloat(f[i], 64)
			switch f[i+1] {
			case "ns/op":
				l.ns = v
			case "cpu-ns/op":
				l.cpu = v
			case "B/op":
				l.bytes = v
			case "allocs/op":
				l.allocs = v
			case "ratio-to-bcrypt9":
				l.ratio = v
			}
		}
		if _, ok := results[name]; !ok {
			order = append(order, name)
		}
		results[name] = append(results[name], l)
	}
	med := map[string]benchLine{}
	w.WriteString("| Benchmark | ns/op | CPU ns/op | B/op | allocs/op |\n|---|---:|---:|---:|---:|\n")
	for _, name := range order {
		ls := results[name]
		m := benchLine{ns: median(ls, func(l benchLine) float64 { return l.ns }), cpu: median(ls, func(l benchLine) float64 { return l.cpu }),
			bytes: median(ls, func(l benchLine) float64 { return l.bytes }), allocs: median(ls, func(l benchLine) float64 { return l.allocs })}
		med[name] = m
		cpu := "–"
		if m.cpu > 0 {
			cpu = strconv.FormatFloat(m.cpu, 'f', 0, 64)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %.0f | %.0f |\n", name, strconv.FormatFloat(m.ns, 'f', 0, 64), cpu, m.bytes, m.allocs)
	}
	if over, ok := med["BenchmarkOverhead/created"]; ok {
		if bc, ok := med["BenchmarkVerifyCost9"]; ok && bc.ns > 0 {
			fmt.Fprintf(w, "\noncecall's own work on a created call (BenchmarkOverhead/created) is %.3f%% of one BCrypt verification at cost 9; with the SDK's serialization and signing (BenchmarkOverheadWithSDK/created) %.3f%%.\n",
				100*over.ns/bc.ns, 100*med["BenchmarkOverheadWithSDK/created"].ns/bc.ns)
		}
	}
	worst, worstName := 0.0, ""
	for _, name := range order {
		if strings.HasPrefix(name, "BenchmarkUnauthenticated/") {
			if r := median(results[name], func(l benchLine) float64 { return l.ratio }); r > worst {
				worst, worstName = r, name
			}
		}
	}
	if worstName != "" {
		fmt.Fprintf(w, "\nThe costliest /mcp request without a valid credential (BenchmarkUnauthenticated: every shape up to the 128 KiB body limit, through the door and the SDK) is %s, at %.3f of one BCrypt verification at cost 9 timed in the same run.\n", worstName, worst)
		target(w, "an unauthenticated /mcp request ÷ one BCrypt verification", ftoa(worst, 3), "≤ 0.10", worst <= 0.10)
	}
	w.WriteString("\nBenchmarkOverhead runs a call through callback.Handler with the store requests built but not sent (decode, read the user's record on its own goroutine as beside BCrypt, validate, canonicalize, hash, build the TransactWriteItems input, encode the answer and the log line); with no BCrypt work to overlap, the hand-over between the two goroutines shows in its figures; BenchmarkOverheadWithSDK also serializes, signs and decodes it with the real SDK client over a transport that answers at once. Neither does BCrypt work. CPU ns/op is the process's CPU time (GC included) per call, which other work on the machine disturbs less than wall time.\n")
	if pass, err := os.ReadFile(filepath.Join("internal", "bench", "profile-pass.md")); err == nil {
		w.WriteString("\n")
		w.Write(pass)
	}
	return nil
}

func median(ls []benchLine, f func(benchLine) float64) float64 {
	vs := make([]float64, len(ls))
	for i, l := range ls {
		vs[i] = f(l)
	}
	slices.Sort(vs)
	if len(vs) == 0 {
		return 0
	}
	return vs[len(vs)/2]
}

func floorPart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## At the floor: single-client latency\n\n")
	st, err := StartStore()
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	rs, err := Floor(ctx, st, o.FloorSamples, o.FloorBudget)
	if err != nil {
		return err
	}
	w.WriteString("One client sends create_ticket calls with a cost-9 nonce to the local HTTP server (`httpapi` over the handler as `app` wires it) over an embedded store on loopback. Each call sample alternates with a floor sample: one `nonce.Verifier.Verify` of the same nonce plus the same `TransactWriteItems` (`dynamo.Store.CreateInput`, built before timing) sent by the bare SDK client to the same store. The call also reads its user's record (a consistent `GetItem`), started beside the BCrypt verification; the floor has no such read, so the ratio shows what of it BCrypt does not hide. For replays the floor's transaction is cancelled by the existing claim and carries the old item, as the replay's is. Every 25 created samples, between samples, the table is pruned back to its users' records, so that every sample meets a table of the same size.\n\n")
	w.WriteString("| Call | Samples | Call p50 | Call p99 | BCrypt p50 | TransactWriteItems p50 | Floor p50 | p50 call ÷ floor | Store requests per call |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range rs {
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | %s | %s | **%s** | %s |\n", r.Kind, len(r.Call), ms(r.Call.P50()), ms(r.Call.P99()),
			ms(r.Bcrypt.P50()), ms(r.Store.P50()), ms(r.Floor.P50()), ftoa(r.Ratio(), 3), Describe(r.Requests, len(r.Call)))
	}
	w.WriteString("\n")
	for _, r := range rs {
		target(w, "p50 latency of a "+r.Kind+" call ÷ its floor", ftoa(r.Ratio(), 3), "≤ 1.10", r.Ratio() <= 1.10)
	}
	return nil
}

func throughputPart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## Throughput with concurrent clients\n\n")
	st, err := StartStore()
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	r, err := Throughput(ctx, st, o.Clients, o.Duration)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d clients send created calls with a cost-9 nonce for %s in all through the local HTTP path. The ceiling is cores ÷ one BCrypt verification (median of %d single verifications before and after the run). BCrypt alone on the same %d goroutines, in windows taking turns with the calls' windows (4 of each), shows what the shared machine gave BCrypt at the time. Before each window the table is pruned back to its user records (the embedded store copies a whole table for every transaction). The store runs in the same process, on the same two cores, which on AWS it would not.\n\n",
		r.Clients, o.Duration, len(r.Bcrypt), r.Clients)
	w.WriteString("| Calls | Time | Calls/s | BCrypt p50 | Cores | Ceiling (cores ÷ BCrypt) | Calls/s ÷ ceiling | BCrypt-only verifications/s | Calls/s ÷ BCrypt-only | Store requests per call |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	fmt.Fprintf(w, "| %d | %s | %s | %s | %d | %s | **%s** | %s | %s | %s |\n\n", r.Calls, r.Elapsed.Round(time.Millisecond), ftoa(r.Rate(), 1), ms(r.Bcrypt.P50()),
		r.Cores, ftoa(r.Ceiling(), 1), ratio(r.Rate(), r.Ceiling()), ftoa(r.BcryptOnly, 1), ratio(r.Rate(), r.BcryptOnly), Describe(r.Requests, int(r.Calls)))
	target(w, "calls/s ÷ (cores ÷ one BCrypt verification)", ratio(r.Rate(), r.Ceiling()), "≥ 0.85", r.Rate()/r.Ceiling() >= 0.85)
	return nil
}

func heapPart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## No leak: heap after many calls\n\n")
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	st, err := StartExternalStore(exe)
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	for _, door := range []string{"callback", "mcp"} {
		r, err := Heap(ctx, st.URL, 200, o.HeapFirst, o.HeapSecond, door)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "### Through /%s\n\n", door)
		fmt.Fprintf(w, "One process serves the local HTTP path (real wiring; the real nonce check, at BCrypt cost 4 to keep the run short) and drives it through POST /%s with 2 clients; the store runs in a child process (`oncecall-bench store`) so its in-memory items are not counted. %d users in 10 tenants, in blocks of ten calls per user (3 created, 4 replays, 3 get_ticket): %d created, %d deduplicated, %d found. When a user creates an operation its previous one is deleted from the store, as TTL expiry would, because the embedded store copies a whole table on every transaction. Readings of `runtime.MemStats.HeapInuse` and `runtime.NumGoroutine` after two forced GCs, with the clients' idle connections closed; every call reads its user from the store, and nothing caches it.",
			door, r.Users, r.Kinds["created"], r.Kinds["deduplicated"], r.Kinds["found"])
		if door == "mcp" {
			w.WriteString(" Each call is an MCP `tools/call` carrying the nonce, the user and `request_id` in `params._meta`, served by the MCP SDK's stateless handler: a session made and closed per request.")
		}
		w.WriteString("\n\n| After calls | Heap in use | Goroutines |\n|---:|---:|---:|\n")
		fmt.Fprintf(w, "| %d | %s | %d |\n| %d | %s | %d |\n\n", r.Calls1, mib(float64(r.HeapInuse1)), r.Goroutines1, r.Calls2, mib(float64(r.HeapInuse2)), r.Goroutines2)
		through := ""
		if door == "mcp" {
			through = " through /mcp"
		}
		target(w, fmt.Sprintf("heap in use after %d calls%s ÷ after %d", r.Calls2, through, r.Calls1), ftoa(r.Ratio(), 3), "≤ 1.5", r.Ratio() <= 1.5)
		target(w, "goroutines after ÷ before"+through, fmt.Sprintf("%d → %d", r.Goroutines1, r.Goroutines2), "no growth", r.Goroutines2 <= r.Goroutines1)
	}
	return nil
}

func mib(b float64) string { return ftoa(b/(1<<20), 2) + " MiB" }
