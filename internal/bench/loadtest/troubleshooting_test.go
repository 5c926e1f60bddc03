package loadtest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/bench/loadtest"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/local/rtlocal"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/secret"
	"github.com/oncecall/oncecall/internal/testing/doctest"
)

// troubleshootingPage is the page whose quoted messages
// TestTroubleshootingShowsWhatTheProgramsSay holds to the programs.
const troubleshootingPage = "docs/troubleshooting.md"

// quotedElsewhere are the sections of the troubleshooting page whose
// messages come from programs this repository does not build: the go
// command and the AWS CLI. They are quoted from runs on the machine the
// page was written on.
var quotedElsewhere = map[string]bool{
	"### go.mod requires go >= 1.27.3":                   true,
	"### go: download go1.27.3: toolchain not available": true,
	"### aws dynamodb scan: You must specify a region":   true,
}

// TestTroubleshootingShowsWhatTheProgramsSay: every message the
// troubleshooting page quotes in a text block from this repository's
// programs is what they print, line by line ("…" stands for anything), made
// here the way a reader meets it: a second server on a taken address, the
// admin tool given an empty -key, a nonce of another key on the callback and
// on the MCP door, a browser's Origin, the destination secret's placeholder
// of template.yaml, the demo key in the hook-key secret, Request Tracker
// missing, and the Makefile without cargo.
func TestTroubleshootingShowsWhatTheProgramsSay(t *testing.T) {
	root, pages, err := doctest.Load()
	if err != nil {
		t.Fatal(err)
	}
	var text string
	for _, p := range pages {
		if p.Path == troubleshootingPage {
			text = p.Text
		}
	}
	if text == "" {
		t.Fatalf("no %s", troubleshootingPage)
	}
	s := startServer(t)
	otherKey, err := nonce.Generate("another-hook-key-of-thirty-two-bytes-at-least", nonce.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	// A reader's addresses are make run's.
	local := func(out string) string {
		return strings.NewReplacer(s.URL, docCallback, strings.TrimPrefix(s.URL, "http://"), strings.TrimPrefix(docCallback, "http://")).Replace(out)
	}
	placeholder := regexp.MustCompile(`(?m)^\s*SecretString: '(\{"placeholder".*\})'$`).FindStringSubmatch(readRoot(t, root, "template.yaml"))
	if placeholder == nil {
		t.Fatal("template.yaml has no destination secret placeholder")
	}
	says := map[string]func(t *testing.T) string{
		"### make run: the address is already in use": func(t *testing.T) string {
			// Both of make run's addresses taken, as an earlier make run
			// holds them: the store's is met first.
			var args, back []string
			for _, a := range []struct{ flag, docs string }{{"-addr", docCallback}, {"-db-addr", docStore}} {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
				args = append(args, a.flag, ln.Addr().String())
				back = append(back, ln.Addr().String(), strings.TrimPrefix(a.docs, "http://"))
			}
			out, _ := exec.Command(serverBin, args...).CombinedOutput()
			return strings.NewReplacer(back...).Replace(lastLine(out))
		},
		"### make: building dynoxide needs Rust's cargo": func(t *testing.T) string {
			// make with a PATH that holds no cargo and no dynoxide, and
			// the store's folder empty.
			bin := onlyTools(t)
			cmd := exec.Command(filepath.Join(bin, "make"), "-s", "dynoxide", "DYNOXIDE_ROOT="+t.TempDir())
			cmd.Dir = root
			cmd.Env = []string{"PATH=" + bin, "HOME=" + t.TempDir()}
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("make dynoxide without cargo succeeded:\n%s", out)
			}
			first, _, _ := strings.Cut(string(out), "\n")
			return first
		},
		"### make run DESTINATION=rt: Request Tracker is not installed": func(t *testing.T) string {
			// The Makefile's words where there is no apt-get, then the
			// server's where RT is missing.
			makefile := readRoot(t, root, "Makefile")
			msg := "Request Tracker is installed from Debian's packages: this machine has no apt-get"
			if !strings.Contains(makefile, `echo "make: `+msg+`"`) {
				t.Errorf("the Makefile does not say %q", msg)
			}
			missing := &os.PathError{Op: "stat", Path: rtlocal.ServerPath, Err: syscall.ENOENT}
			return "make: " + msg + "\n" + "oncecall: " + fmt.Sprintf("rtlocal: Request Tracker is not installed (%s: %v): %s", rtlocal.ServerPath, errors.Unwrap(missing), rtlocal.InstallHint)
		},
		"### 403 invalid_nonce on AWS": func(t *testing.T) string {
			body := post(t, s.URL+"/callback", otherKey, "", `{"type":"tool_call","function":{"name":"create_ticket","content":{"title":"x"}},"context":{"externalUserId":"user-a","metadata":{"request_id":"r-1"}}}`)
			admin := adminBin(t)
			out, err := exec.Command(admin, "nonce", "-key", "").CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Errorf("oncecall-admin nonce -key \"\": %v, want exit 2", err)
			}
			return body + "\n" + lastLine(out)
		},
		"### 403 invalid_nonce: a BCrypt cost outside 4..9": func(t *testing.T) string {
			// A well-formed nonce of cost 12, as an older AIVAX example
			// made them: refused for its cost before any BCrypt work.
			return post(t, s.URL+"/callback", "$2b$12$"+strings.Repeat("A", 53), "", `{"type":"tool_call","function":{"name":"create_ticket","content":{"title":"x"}},"context":{"externalUserId":"user-a","metadata":{"request_id":"r-1"}}}`)
		},
		"### Every call answers 500, and the log says the public demo key": func(t *testing.T) string {
			// What the callback's cold start prints (functions/callback's
			// fatal) when the secret's current key is the demo key.
			err := secret.Keys{Current: nonce.DemoKey}.Check(false)
			if !errors.Is(err, nonce.ErrKeyDemo) {
				t.Fatalf("the demo key outside a local run: %v", err)
			}
			return "oncecall: " + err.Error()
		},
		"### The delivery worker does not start: the destination secret": func(t *testing.T) string {
			_, err := app.Destination(config.Delivery{Destination: config.DestinationWebhook, URL: "https://helpdesk.example.com", Token: placeholder[1], Timeout: time.Second})
			if err == nil {
				t.Fatal("the webhook accepts the placeholder")
			}
			return "oncecall-deliver: " + err.Error()
		},
		"### The client shows an error -32001 with a code": func(t *testing.T) string {
			return post(t, s.URL+"/mcp", "", "", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{"title":"x"},"_meta":{"_aiv_nonce":"`+otherKey+`","_aiv_external_user_id":"user-a","request_id":"r-2"}}}`)
		},
		"### 403: Origin … may not call this server": func(t *testing.T) string {
			return post(t, s.URL+"/mcp", "", "http://localhost:6274", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		},
	}
	checked := map[string]bool{}
	for _, b := range doctest.Blocks(troubleshootingPage, text) {
		if b.Lang != "text" {
			continue
		}
		if quotedElsewhere[b.Heading] {
			checked[b.Heading] = true
			continue
		}
		say, ok := says[b.Heading]
		if !ok {
			t.Errorf("%s:%d under %q quotes a message this test does not make: add it", troubleshootingPage, b.Line, b.Heading)
			continue
		}
		if checked[b.Heading] {
			continue // the section's blocks are compared together, below
		}
		checked[b.Heading] = true
		var shown []string
		for _, o := range doctest.Blocks(troubleshootingPage, text) {
			if o.Lang == "text" && o.Heading == b.Heading {
				shown = append(shown, o.Text)
			}
		}
		t.Run(strings.TrimLeft(b.Heading, "# "), func(t *testing.T) {
			got := local(say(t))
			if msg := matchOutput(strings.Join(shown, "\n"), got); msg != "" {
				t.Errorf("%s shows\n%s\nbut the program says\n%s\n(%s)", troubleshootingPage, strings.Join(shown, "\n"), got, msg)
			}
		})
	}
	for h := range says {
		if !checked[h] {
			t.Errorf("%s has no text block under %q", troubleshootingPage, h)
		}
	}
}

// lastLine is the last non-empty line of out.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// readRoot reads a file of the repository.
func readRoot(t *testing.T, root, rel string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// post sends body to u as a JSON POST, with a nonce header and an Origin
// when given, and returns the answer's body.
func post(t *testing.T, u, n, origin, body string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if n != "" {
		req.Header.Set("X-Request-Nonce", n)
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	c := &http.Client{Timeout: 30 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSpace(out))
}

// adminBin builds oncecall-admin once into the test's folder.
func adminBin(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bins, err := loadtest.Build(ctx, t.TempDir(), "cmd/oncecall-admin")
	if err != nil {
		t.Fatal(err)
	}
	return bins[0]
}
