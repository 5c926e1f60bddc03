package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/bench/loadtest"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/doctest"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// runbookSection is the README section whose worked example
// TestRunbookExample runs: the commands from its example heading on.
const (
	runbookPage    = "../../docs/runbook.md"
	runbookSection = "## A delivery is uncertain"
	runbookExample = "### Worked example on the local helpdesk"
)

// The addresses the README's worked example names: make run's callback
// and its local helpdesk. The test's server listens on free ports; the
// commands' URLs and the outputs are translated between the two.
const (
	readmeCallback = "http://127.0.0.1:3210"
	readmeHelpdesk = "http://127.0.0.1:8025"
)

// runbookStep is one shell command of the runbook, or an output it shows
// (a json or text block, which follows the command whose output it is).
type runbookStep struct {
	kind string // "sh", "json" or "text"
	text string
}

// runbookSteps returns the commands and shown outputs of the runbook's
// worked example, in order, with continuation lines joined, and the whole
// runbook section.
func runbookSteps(t *testing.T) (steps []runbookStep, section string) {
	t.Helper()
	raw, err := os.ReadFile(runbookPage)
	if err != nil {
		t.Fatal(err)
	}
	section, ok := doctest.Section(string(raw), runbookSection)
	if !ok {
		t.Fatalf("docs/runbook.md has no %q section", runbookSection)
	}
	example, ok := doctest.Section(section, runbookExample)
	if !ok {
		t.Fatalf("the runbook has no %q", runbookExample)
	}
	for _, b := range doctest.Blocks(runbookPage, example) {
		switch b.Lang {
		case "sh":
			for _, l := range shellCommands(b.Text) {
				if l != "" {
					steps = append(steps, runbookStep{"sh", l})
				}
			}
		case "json", "text":
			steps = append(steps, runbookStep{b.Lang, b.Text})
		}
	}
	return steps, section
}

// server is cmd/oncecall as make run starts it, on free loopback ports.
type server struct {
	callback, helpdesk, store string
	cmd                       *exec.Cmd
	done                      chan struct{}
	mu                        sync.Mutex
	logs                      strings.Builder
}

// serverVars are the settings the started server must not inherit from
// the test's environment: it runs with what the README's make line sets.
var serverVars = regexp.MustCompile(`^(TABLE_NAME|DYNAMODB_ENDPOINT|HOOK_KEY.*|NONCE_MAX_COST|RETENTION|KEY_POLICY|LOG_LEVEL|PUBLIC_URL|METRICS.*|DESTINATION.*|ZENDESK.*|DELIVERY_.*)=`)

func startServer(t *testing.T, bin string, env []string) *server {
	t.Helper()
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-db-addr", "127.0.0.1:0", "-helpdesk-addr", "127.0.0.1:0")
	for _, kv := range os.Environ() {
		if !serverVars.MatchString(kv) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	go s.read(stderr, ready)
	go func() { _ = cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-s.done
		}
	})
	select {
	case <-ready:
	case <-s.done:
		t.Fatalf("the server stopped before serving:\n%s", s.log())
	case <-time.After(loadtest.StartTimeout):
		t.Fatalf("the server did not serve within %v:\n%s", loadtest.StartTimeout, s.log())
	}
	return s
}

// read keeps the server's log and takes the addresses from it.
func (s *server) read(r io.Reader, ready chan<- struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	signalled := false
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.logs.WriteString(line + "\n")
		var e struct{ Msg, URL, Endpoint, Callback string }
		if json.Unmarshal([]byte(line), &e) == nil {
			switch {
			case e.Msg == "local helpdesk":
				s.helpdesk = e.URL
			case strings.HasPrefix(e.Msg, "local store (dynoxide"):
				s.store = e.Endpoint
			case e.Msg == "serving" && !signalled:
				s.callback = strings.TrimSuffix(e.Callback, "/callback")
				signalled = true
				close(ready)
			}
		}
		s.mu.Unlock()
	}
}

func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logs.String()
}

// TestRunbookExample runs the runbook's worked example as a reader
// would, command by command, against the real server started as the
// README's make line starts it (its local store, its local helpdesk,
// its worker): curl against the callback and the helpdesk's control API,
// the admin tool with nothing set (the local store of make run). Every
// command must succeed, and every output the README shows must match
// what the command printed ("…" stands for what differs from run to run).
// It also checks that the runbook quotes what the model is told verbatim.
func TestRunbookExample(t *testing.T) {
	steps, section := runbookSteps(t)
	for _, s := range []delivery.State{delivery.Queued, delivery.Delivered, delivery.Uncertain, delivery.Failed, delivery.Abandoned} {
		if msg := (&delivery.Record{State: s}).View(time.Now()).Message; !strings.Contains(strings.Join(strings.Fields(section), " "), msg) {
			t.Errorf("the runbook does not quote what the model is told of a %s delivery: %q", s, msg)
		}
	}
	if testing.Short() {
		t.Skip("builds and starts the server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	bins, err := loadtest.Build(ctx, t.TempDir(), "cmd/oncecall")
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	n, err := nonce.Generate(localdb.DemoHookKey, nonce.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	var srv *server
	vars := map[string]string{}
	last := "" // the output of the last command
	shown := 0 // outputs compared
	ran := 0   // commands run
	client := &http.Client{Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	// translate turns the README's addresses into the server's, or back.
	translate := func(s string, back bool) string {
		pairs := [][2]string{{readmeCallback, srv.callback}, {readmeHelpdesk, srv.helpdesk}}
		for _, p := range pairs {
			if back {
				s = strings.ReplaceAll(s, p[1], p[0])
			} else {
				s = strings.ReplaceAll(s, p[0], p[1])
			}
		}
		return s
	}
	for _, st := range steps {
		switch st.kind {
		case "json":
			shown++
			if err := matchShown(st.text, last); err != nil {
				t.Errorf("the README shows\n%s\nafter the command, which printed\n%s\n%v", st.text, last, err)
			}
			continue
		case "text":
			shown++
			out := strings.Join(strings.Fields(last), " ")
			for _, line := range strings.Split(st.text, "\n") {
				want, _, _ := strings.Cut(line, "…")
				if want = strings.Join(strings.Fields(want), " "); want != "" && !strings.Contains(out, want) {
					t.Errorf("the README shows %q, which the command did not print:\n%s", line, last)
				}
			}
			continue
		}
		ran++
		if v, ok := strings.CutSuffix(st.text, "=$(make -s nonce)"); ok {
			vars[v] = n
			continue
		}
		// The three forms of the runbook that capture an answer: VAR=$(curl
		// …), VAR=$(jq -r .member <<<"$OTHER") and echo "$VAR".
		if m := captureCurl.FindStringSubmatch(st.text); m != nil {
			words, err := shellWords(m[2], vars)
			if err != nil || srv == nil {
				t.Fatalf("%q: %v (before make run: %v)", st.text, err, srv == nil)
			}
			vars[m[1]] = translate(curl(t, client, words[1:], func(u string) string { return translate(u, false) }), true)
			continue
		}
		if m := captureJQ.FindStringSubmatch(st.text); m != nil {
			var doc map[string]any
			if err := json.Unmarshal([]byte(vars[m[3]]), &doc); err != nil {
				t.Fatalf("%q: $%s is not JSON: %v\n%s", st.text, m[3], err, vars[m[3]])
			}
			v, ok := doc[m[2]].(string)
			if !ok {
				t.Fatalf("%q: $%s has no string member %s:\n%s", st.text, m[3], m[2], vars[m[3]])
			}
			vars[m[1]] = v
			continue
		}
		if m := echoVar.FindStringSubmatch(st.text); m != nil {
			last = vars[m[1]]
			continue
		}
		words, err := shellWords(st.text, vars)
		if err != nil {
			t.Fatalf("%q: %v", st.text, err)
		}
		switch {
		case len(words) >= 2 && words[0] == "make" && words[1] == "run":
			srv = startServer(t, bins[0], words[2:])
		case srv == nil:
			t.Fatalf("%q comes before make run", st.text)
		case words[0] == "sleep":
			// The reader waits for the worker: so does the test, until the
			// ticket's delivery has left the queue, and for as long as the
			// README says when a decision must wait (SafeAfter, on the
			// store's clock, which counts whole seconds).
			r := waitSettled(t, srv, vars["TICKET_ID"])
			if secs, err := strconv.Atoi(words[len(words)-1]); err == nil && r != nil {
				if wait := time.Until(r.SafeAfter.Add(time.Second)); wait > 0 && wait <= time.Duration(secs)*time.Second {
					time.Sleep(wait + 10*time.Millisecond)
				}
			}
		case words[0] == "curl":
			last = translate(curl(t, client, words[1:], func(u string) string { return translate(u, false) }), true)
		case strings.HasPrefix(st.text, adminPrefix):
			r := &rig{t: t, vars: map[string]string{}, local: srv.store}
			res := r.run(words[1:]...)
			if res.code != exitOK {
				t.Fatalf("%q: exit %d\n%s%s", st.text, res.code, res.stdout, res.stderr)
			}
			last = translate(res.stdout, true)
		default:
			t.Fatalf("the runbook runs %q, which this test does not know how to run: extend it", st.text)
		}
	}
	if ran < 12 || shown < 4 {
		t.Errorf("the runbook's example has %d commands and %d shown outputs; want at least 12 and 4", ran, shown)
	}
	if t.Failed() {
		t.Logf("server log:\n%s", srv.log())
	}
}

// The capturing forms the runbook uses.
var (
	captureCurl = regexp.MustCompile(`^([A-Z_]+)=\$\((curl .*)\)$`)
	captureJQ   = regexp.MustCompile(`^([A-Z_]+)=\$\(jq -r \.([a-z_]+) <<<"\$([A-Z_]+)"\)$`)
	echoVar     = regexp.MustCompile(`^echo "\$([A-Z_]+)"$`)
)

// curl runs the curl command line args as curl would for the forms the
// README uses (-s, -X, -H, --data or -d, one URL) and returns the body. A
// status of 400 or more fails the test.
func curl(t *testing.T, c *http.Client, args []string, rewrite func(string) string) string {
	t.Helper()
	method, url, body := "", "", ""
	header := http.Header{}
	for i := 0; i < len(args); i++ {
		switch a := args[i]; a {
		case "-s", "--silent", "-S", "--show-error", "--fail-with-body":
		case "-X", "-H", "-d", "--data", "--data-raw":
			if i+1 >= len(args) {
				t.Fatalf("curl %s without a value", a)
			}
			v := args[i+1]
			i++
			switch a {
			case "-X":
				method = v
			case "-H":
				k, val, _ := strings.Cut(v, ":")
				header.Set(strings.TrimSpace(k), strings.TrimSpace(val))
			default:
				body = v
			}
		default:
			if strings.HasPrefix(a, "-") || url != "" {
				t.Fatalf("curl argument %q: extend the test", a)
			}
			url = rewrite(a)
		}
	}
	if method == "" {
		method = http.MethodGet
		if body != "" {
			method = http.MethodPost
		}
	}
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header
	if body != "" && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded") // as curl --data sends it
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		t.Fatalf("curl %s %s: %d %s", method, url, resp.StatusCode, out)
	}
	return string(out)
}

// waitSettled waits until ticket id's delivery is no longer queued (nor
// held by an attempt) and returns it.
func waitSettled(t *testing.T, s *server, id string) *delivery.Record {
	t.Helper()
	if id == "" {
		t.Fatal("sleep before any ticket was created")
	}
	store := dynamo.New(dynamotest.NewClient(t, s.store, nil), "oncecall")
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := store.Delivery(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if r != nil && r.Reported(time.Now()) != delivery.Queued && r.Reported(time.Now()) != delivery.InProgress {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("ticket %s still queued after 30s: %+v", id, r)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// matchShown reports how got (JSON) differs from want, a JSON value the
// README shows: every member want has, got has with the same value; a
// string with "…" in want matches any string that starts with what comes
// before it.
func matchShown(want, got string) error {
	var w, g any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		return fmt.Errorf("the README's block is not JSON: %w", err)
	}
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		return fmt.Errorf("the output is not JSON: %w", err)
	}
	if err := matchValue("", w, g); err != nil {
		return err
	}
	// The members are shown in the order the server writes them.
	wk, gk := topKeys(want), topKeys(got)
	gk = slices.DeleteFunc(gk, func(k string) bool { return !slices.Contains(wk, k) })
	if !slices.Equal(wk, gk) {
		return fmt.Errorf("members in the order %v, the README shows %v", gk, wk)
	}
	return nil
}

// topKeys returns the member names of a JSON object, in order.
func topKeys(s string) []string {
	dec := json.NewDecoder(strings.NewReader(s))
	var keys []string
	depth := 0
	expectKey := false
	for {
		tok, err := dec.Token()
		if err != nil {
			return keys
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			// At the top level a key comes next after the opening brace
			// and after a nested value ends.
			expectKey = depth == 1
			continue
		case string:
			if depth == 1 && expectKey {
				keys = append(keys, v)
				expectKey = false
				continue
			}
		}
		if depth == 1 {
			expectKey = true
		}
	}
}

func matchValue(path string, w, g any) error {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: not an object", path)
		}
		for k, v := range wv {
			if err := matchValue(path+"."+k, v, gv[k]); err != nil {
				return err
			}
		}
		return nil
	case string:
		gv, ok := g.(string)
		prefix, wild := strings.CutSuffix(wv, "…")
		switch {
		case !ok:
			return fmt.Errorf("%s: %v, want a string", path, g)
		case wild && !strings.HasPrefix(gv, prefix):
			return fmt.Errorf("%s: %q, want %q", path, gv, wv)
		case !wild && gv != wv:
			return fmt.Errorf("%s: %q, want %q", path, gv, wv)
		}
		return nil
	}
	if fmt.Sprint(w) != fmt.Sprint(g) {
		return fmt.Errorf("%s: %v, want %v", path, g, w)
	}
	return nil
}
