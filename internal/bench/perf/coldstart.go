package perf

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/local/rie"
)

// RIEModule is the Runtime Interface Emulator, pinned; the go command builds
// it, so nothing but the Go module proxy is needed.
const RIEModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@v0.0.0-20261030222936-bef5c4ba774d"

// lambdaBuild are the flags of `make build`.
var lambdaBuild = []string{"-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w -buildid="}

// ColdStartResult compares cold starts of two bootstraps under the
// emulator.
type ColdStartResult struct {
	Oncecall, Hello         []startTiming
	OncecallSize, HelloSize int64
	ArmSize                 int64
	OncecallInit, HelloInit initTrace
}

type initTrace struct {
	total time.Duration
	ours  []string // init lines of oncecall's own packages
	top   []pkgInit
}

type pkgInit struct {
	pkg   string
	clock time.Duration
}

// inits returns the init durations of starts.
func inits(starts []startTiming) Durations {
	out := make(Durations, len(starts))
	for i, s := range starts {
		out[i] = s.init()
	}
	return out
}

// firsts returns the first-invocation times of starts.
func firsts(starts []startTiming) Durations {
	out := make(Durations, len(starts))
	for i, s := range starts {
		out[i] = s.first
	}
	return out
}

// warms returns every warm invocation time of starts.
func warms(starts []startTiming) Durations {
	var out Durations
	for _, s := range starts {
		out = append(out, s.warm...)
	}
	return out
}

// Ratio is median init of oncecall ÷ median init of hello world.
func (r ColdStartResult) Ratio() float64 {
	return float64(inits(r.Oncecall).P50()) / float64(inits(r.Hello).P50())
}

// ColdStart builds the emulator and both bootstraps into a temporary
// directory and measures n cold starts of each, alternating.
func ColdStart(ctx context.Context, n int) (ColdStartResult, error) {
	var r ColdStartResult
	dir, err := os.MkdirTemp("", "oncecall-coldstart-")
	if err != nil {
		return r, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	build := func(env []string, args ...string) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goCmd(), args...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
		}
		return nil
	}
	linux := []string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=" + runtime.GOARCH}
	emulator := filepath.Join(dir, "aws-lambda-rie")
	if err := build([]string{"GOBIN=" + dir, "CGO_ENABLED=0", "GOFLAGS="}, "install", RIEModule); err != nil {
		return r, err
	}
	oncecall := filepath.Join(dir, "oncecall", "bootstrap")
	hello := filepath.Join(dir, "hello", "bootstrap")
	arm := filepath.Join(dir, "arm64", "bootstrap")
	if err := build(linux, append(append([]string{"build"}, lambdaBuild...), "-o", oncecall, "./functions/callback")...); err != nil {
		return r, err
	}
	if err := build(linux, append(append([]string{"build"}, lambdaBuild...), "-o", hello, "./internal/bench/hello")...); err != nil {
		return r, err
	}
	if err := build([]string{"CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64"}, append(append([]string{"build"}, lambdaBuild...), "-o", arm, "./functions/callback")...); err != nil {
		return r, err
	}
	r.OncecallSize, r.HelloSize, r.ArmSize = size(oncecall), size(hello), size(arm)

	env := []string{
		"PATH=" + os.Getenv("PATH"),
		"AWS_LAMBDA_FUNCTION_NAME=oncecall", "AWS_LAMBDA_FUNCTION_TIMEOUT=30", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1024",
		"AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_EC2_METADATA_DISABLED=true",
		// As on Lambda: the AWS configuration is built from the region and
		// role credentials (DYNAMODB_ENDPOINT is not a loopback address,
		// and nothing is sent to it during the start). The hook key comes
		// from the environment, which only a local run may do: the store
		// is named as `sam local invoke` names the host's (the Secrets
		// Manager read is the only part left out locally).
		"TABLE_NAME=oncecall", "HOOK_KEY=" + localdb.DemoHookKey, "DYNAMODB_ENDPOINT=http://host.docker.internal:8000",
	}
	if r.OncecallInit, err = traceInit(ctx, oncecall, env); err != nil {
		return r, err
	}
	if r.HelloInit, err = traceInit(ctx, hello, env); err != nil {
		return r, err
	}
	// One discarded start of each warms the page cache.
	for i := -1; i < n; i++ {
		order := []string{hello, oncecall}
		if i%2 != 0 {
			order = []string{oncecall, hello}
		}
		for _, b := range order {
			st, err := coldStart(ctx, emulator, b, env)
			if err != nil {
				return r, fmt.Errorf("%s: %w", filepath.Base(filepath.Dir(b)), err)
			}
			if i < 0 {
				continue
			}
			if b == hello {
				r.Hello = append(r.Hello, st)
			} else {
				r.Oncecall = append(r.Oncecall, st)
			}
		}
	}
	return r, nil
}

func size(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// apiEvent is an API Gateway HTTP API event for a route oncecall answers
// 404 without BCrypt or the store: the invoke itself is trivial.
const apiEvent = `{"version":"2.0","routeKey":"$default","rawPath":"/cold-start","headers":{},"requestContext":{"http":{"method":"GET","path":"/cold-start"},"stage":"$default"},"isBase64Encoded":false}`

// startTiming is one cold start: the first invocation, which includes
// starting the bootstrap process and its initialization up to its first
// request for work, and the warm invocations after it.
type startTiming struct {
	first time.Duration
	warm  Durations
}

// init is the first invocation less a warm one.
func (s startTiming) init() time.Duration { return s.first - s.warm.P50() }

// coldStart runs the emulator with bootstrap (rie.Start, which starts it
// again on new ports when one is taken before it listens) and, once the
// emulator listens, times its first invocation (the emulator starts the
// bootstrap on it) and three warm ones.
func coldStart(ctx context.Context, emulator, bootstrap string, env []string) (startTiming, error) {
	var st startTiming
	e, err := rie.Start(ctx, rie.Options{Emulator: emulator, Bootstrap: bootstrap, Env: env})
	if err != nil {
		return st, err
	}
	defer func() { _ = e.Close() }()
	n := 0
	invoke := func() (time.Duration, error) {
		n++
		t := time.Now()
		inv, err := e.Invoke(ctx, "cold-start-"+strconv.Itoa(n), []byte(apiEvent))
		d := time.Since(t)
		if err != nil {
			return 0, err
		}
		if inv.Status != http.StatusOK {
			return 0, fmt.Errorf("invoke answered %d: %s: %s", inv.Status, inv.Body, strings.Join(e.Output(), "\n"))
		}
		return d, nil
	}
	if st.first, err = invoke(); err != nil {
		return st, err
	}
	for range 3 {
		d, err := invoke()
		if err != nil {
			return st, err
		}
		st.warm = append(st.warm, d)
	}
	return st, nil
}

var initLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, ([0-9.]+) ms clock, ([0-9]+) bytes, ([0-9]+) allocs`)

// traceInit runs bootstrap outside Lambda with GODEBUG=inittrace=1: package
// initialization runs, then lambda.Start stops for want of the runtime API.
func traceInit(ctx context.Context, bootstrap string, env []string) (initTrace, error) {
	var t initTrace
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bootstrap)
	cmd.Env = append(env, "GODEBUG=inittrace=1")
	out, _ := cmd.CombinedOutput()
	sc := bufio.NewScanner(bytes.NewReader(out))
	found := false
	for sc.Scan() {
		m := initLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		found = true
		f, _ := strconv.ParseFloat(m[2], 64)
		d := time.Duration(f * float64(time.Millisecond))
		t.total += d
		t.top = append(t.top, pkgInit{m[1], d})
		if strings.HasPrefix(m[1], "github.com/oncecall/") {
			t.ours = append(t.ours, fmt.Sprintf("`%s` %s ms, %s bytes, %s allocs", m[1], m[2], m[3], m[4]))
		}
	}
	if !found {
		return t, fmt.Errorf("no inittrace output from %s: %s", bootstrap, out)
	}
	sort.Slice(t.top, func(i, j int) bool { return t.top[i].clock > t.top[j].clock })
	t.top = t.top[:min(5, len(t.top))]
	return t, nil
}

func coldStartPart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## Cold start under the Runtime Interface Emulator\n\n")
	r, err := ColdStart(ctx, o.ColdStarts)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "The emulator (`%s`, built by `go install` into a temporary directory) runs each bootstrap, built for linux/%s with `make build`'s flags. It starts the bootstrap on the first invocation, so once the emulator accepts connections the first invocation is timed (process start, package initialization, `main`'s wiring, the first request for work, a trivial invoke), then three warm invocations; **init = first invocation − median warm invocation**. (The emulator's own `Init Duration` line only times its asynchronous dispatch of the init, about 0.03 ms, so it is not used.) %d cold starts of each, alternating, after one discarded start of each. oncecall runs its real Lambda `main` without `DYNAMODB_ENDPOINT`, so its AWS configuration is built as on Lambda, from the region and role credentials Lambda puts in the environment (`app.AWSConfig`; the SDK's shared-config chain, with its STS and SSO clients, is not linked into the functions); the hook key comes from `HOOK_KEY` (the Secrets Manager read, the only network call of a cold start, is left out locally).\n\n",
		RIEModule, runtime.GOARCH, len(r.Oncecall))
	w.WriteString("| Bootstrap | Stripped size | Init p50 | Init p90 | First invocation p50 | Warm invocation p50 | Package init (inittrace, total) |\n|---|---:|---:|---:|---:|---:|---:|\n")
	row := func(name string, size int64, st []startTiming, it initTrace) {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", name, mib(float64(size)), ms(inits(st).P50()), ms(inits(st).Quantile(0.9)),
			ms(firsts(st).P50()), ms(warms(st).P50()), ms(it.total))
	}
	row("aws-lambda-go hello world (`internal/bench/hello`)", r.HelloSize, r.Hello, r.HelloInit)
	row("oncecall (`functions/callback`)", r.OncecallSize, r.Oncecall, r.OncecallInit)
	fmt.Fprintf(w, "\nInit p50 ratio oncecall ÷ hello world: **%s**. Stripped `bootstrap` as deployed (linux/arm64, `make build`): **%s** (%d bytes).\n\n", ftoa(r.Ratio(), 3), mib(float64(r.ArmSize)), r.ArmSize)
	if len(r.OncecallInit.ours) > 0 {
		w.WriteString("Package-level initialization in oncecall's own packages (GODEBUG=inittrace=1); the rest of the package-init total is the Go runtime, the standard library and the AWS SDK:\n\n")
		for _, l := range r.OncecallInit.ours {
			w.WriteString("- " + l + "\n")
		}
		w.WriteString("\n")
	} else {
		w.WriteString("None of oncecall's own packages does package-level initialization work: GODEBUG=inittrace=1 lists none of them, and the package-init total is the Go runtime, the standard library and the AWS SDK.\n\n")
	}
	w.WriteString("The largest package initializations of oncecall's bootstrap in that trace: ")
	for i, p := range r.OncecallInit.top {
		if i > 0 {
			w.WriteString(", ")
		}
		fmt.Fprintf(w, "`%s` %s", p.pkg, ms(p.clock))
	}
	sdk := true
	for _, p := range r.OncecallInit.top {
		sdk = sdk && strings.HasPrefix(p.pkg, "github.com/aws/")
	}
	if sdk {
		w.WriteString(": all the AWS SDK's, which the clients oncecall needs bring with them.\n\n")
	} else {
		w.WriteString(".\n\n")
	}
	target(w, "cold-start init p50, oncecall ÷ hello world", ftoa(r.Ratio(), 3), "≤ 2", r.Ratio() <= 2)
	return nil
}
