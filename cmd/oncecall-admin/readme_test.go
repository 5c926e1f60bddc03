package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/testing/doctest"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

const (
	// adminPrefix starts every admin example in the docs.
	adminPrefix = "bin/oncecall-admin "
	// localPage and localSection hold the examples that run as written
	// beside make run.
	localPage    = "docs/operations.md"
	localSection = "## The admin tool"
)

// readmeVars stand for values the README's reader gets from elsewhere
// (another command's output).
var readmeVars = map[string]string{
	"TICKET_ID":  "5b0c4f2e-8d1a-4c3b-9e7f-0a1b2c3d4e5f",
	"OP_KEY":     strings.Repeat("3f", 32),
	"KEY":        "an-example-hook-key",
	"REQUEST_ID": "request-example",
	// The deploy page sets STACK_* from the stack's outputs.
	"STACK_TableName":   "oncecall-Table-1A2B3C4D5E6F",
	"STACK_AuditKeyArn": "arn:aws:kms:eu-west-1:123456789012:key/6f1c2a8e-0b3d-4e5f-8a9b-0c1d2e3f4a5b",
}

// shellLine is one shell command of a code block of the docs.
type shellLine struct {
	page, section string
	text          string
}

// readmeShell returns every command of the docs' sh code blocks (README.md,
// then docs/), with continuation lines joined, each with the page and the
// section it is in.
func readmeShell(t *testing.T) []shellLine {
	t.Helper()
	_, pages, err := doctest.Load()
	if err != nil {
		t.Fatal(err)
	}
	var out []shellLine
	for _, p := range pages {
		for _, b := range doctest.Blocks(p.Path, p.Text) {
			if b.Lang == "sh" {
				for _, line := range shellCommands(b.Text) {
					out = append(out, shellLine{p.Path, b.Heading, line})
				}
			}
		}
	}
	return out
}

// shellCommands splits a shell block into its commands, joining the lines
// a backslash continues.
func shellCommands(block string) []string {
	var out []string
	pending := ""
	for _, line := range strings.Split(block, "\n") {
		if strings.HasSuffix(line, "\\") {
			pending += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		out = append(out, strings.TrimSpace(pending+line))
		pending = ""
	}
	return out
}

// shellWords splits a command as a POSIX shell would for the simple forms
// the README uses: quotes, backslash escapes, $VAR and ${VAR} from vars,
// a comment, and an end at a pipe, a list or a redirection.
func shellWords(line string, vars map[string]string) ([]string, error) {
	var words []string
	var cur strings.Builder
	inWord := false
	flush := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	expand := func(s string, i int) (int, error) {
		j := i + 1
		var name string
		if j < len(s) && s[j] == '{' {
			end := strings.IndexByte(s[j:], '}')
			if end < 0 {
				return 0, errors.New("unclosed ${")
			}
			name, j = s[j+1:j+end], j+end+1
		} else {
			for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			name = s[i+1 : j]
		}
		if name == "" {
			return 0, errors.New("$ without a name (command substitution is not supported)")
		}
		cur.WriteString(vars[name])
		inWord = true
		return j, nil
	}
	for i := 0; i < len(line); {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			flush()
			i++
		case c == '#' && !inWord:
			flush()
			return words, nil
		case c == '|' || c == ';' || c == '&' || c == '>' || c == '<':
			flush()
			return words, nil
		case c == '\'':
			end := strings.IndexByte(line[i+1:], '\'')
			if end < 0 {
				return nil, errors.New("unclosed '")
			}
			cur.WriteString(line[i+1 : i+1+end])
			inWord, i = true, i+end+2
		case c == '"':
			inWord = true
			i++
			for i < len(line) && line[i] != '"' {
				switch {
				case line[i] == '\\' && i+1 < len(line):
					cur.WriteByte(line[i+1])
					i += 2
				case line[i] == '$':
					j, err := expand(line, i)
					if err != nil {
						return nil, err
					}
					i = j
				default:
					cur.WriteByte(line[i])
					i++
				}
			}
			if i >= len(line) {
				return nil, errors.New(`unclosed "`)
			}
			i++
		case c == '\\' && i+1 < len(line):
			cur.WriteByte(line[i+1])
			inWord, i = true, i+2
		case c == '$':
			j, err := expand(line, i)
			if err != nil {
				return nil, err
			}
			i = j
		default:
			cur.WriteByte(c)
			inWord = true
			i++
		}
	}
	flush()
	return words, nil
}

// applyShell applies the assignment, export and unset lines a reader
// types to vars.
func applyShell(words []string, vars map[string]string) {
	assigns := len(words) > 0
	for _, w := range words {
		k, _, ok := strings.Cut(w, "=")
		assigns = assigns && ok && shellName.MatchString(k)
	}
	switch {
	case assigns: // NAME=value ...: shell variables
		for _, w := range words {
			k, v, _ := strings.Cut(w, "=")
			vars[k] = v
		}
	case len(words) > 1 && words[0] == "export":
		for _, w := range words[1:] {
			if k, v, ok := strings.Cut(w, "="); ok {
				vars[k] = v
			}
		}
	case len(words) > 1 && words[0] == "unset":
		for _, w := range words[1:] {
			delete(vars, w)
		}
	}
}

// shellName is a shell variable's name.
var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// TestAdminExamplesParse: every admin command of the docs is a valid
// command of the tool, in the environment the docs' own export and unset
// lines make.
func TestAdminExamplesParse(t *testing.T) {
	vars := map[string]string{}
	for k, v := range readmeVars {
		vars[k] = v
	}
	n, page := 0, ""
	for _, l := range readmeShell(t) {
		if l.page != page { // each page is read in a shell of its own
			page, vars = l.page, map[string]string{}
			for k, v := range readmeVars {
				vars[k] = v
			}
		}
		words, err := shellWords(l.text, vars)
		if !strings.HasPrefix(l.text, adminPrefix) {
			if err == nil { // other commands only matter for what they export
				applyShell(words, vars)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %q: %v", l.section, l.text, err)
			continue
		}
		n++
		r := &rig{t: t, vars: vars, local: closedEndpoint}
		if err := parseOnly(r, words[1:]); err != nil {
			t.Errorf("%s: %q does not parse: %v", l.section, l.text, err)
		}
	}
	if n < 10 {
		t.Errorf("only %d admin examples found in the docs", n)
	}
}

// TestAdminExamplesRun runs the admin examples of the operations page's
// section on the local store, in order, against a store set up as make run
// sets it up and holding the quick start's ticket, with nothing else set:
// each must work as written.
func TestAdminExamplesRun(t *testing.T) {
	env := dynamotest.New(t)
	ctx := context.Background()
	store := dynamo.New(env.Client, env.Table)
	if _, err := localdb.SeedDemo(ctx, store); err != nil {
		t.Fatal(err)
	}
	ticketID := quickStartTicket(t, env, store)

	vars := map[string]string{"TICKET_ID": ticketID, "TABLE_NAME": env.Table}
	r := &rig{t: t, env: env, vars: vars, local: env.Endpoint}
	n := 0
	for _, l := range readmeShell(t) {
		if l.page != localPage || l.section != localSection {
			continue
		}
		words, err := shellWords(l.text, vars)
		if err != nil {
			t.Fatalf("%q: %v", l.text, err)
		}
		applyShell(words, vars)
		if !strings.HasPrefix(l.text, adminPrefix) {
			continue
		}
		n++
		res := r.run(words[1:]...)
		if res.code != exitOK {
			t.Errorf("%q: exit %d\n%s%s", l.text, res.code, res.stdout, res.stderr)
		}
	}
	if n < 5 {
		t.Errorf("only %d admin examples in %q", n, localSection)
	}
}

// quickStartTicket sends the quick start's call through the real
// callback handler over store and returns the ticket it created.
func quickStartTicket(t *testing.T, env *dynamotest.Env, store *dynamo.Store) string {
	t.Helper()
	cfg := config.Defaults
	cfg.Table, cfg.Endpoint, cfg.HookKey = env.Table, env.Endpoint, localdb.DemoHookKey
	h, err := app.Handler(cfg, store, slog.New(slog.NewJSONHandler(io.Discard, nil)), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(h, httpapi.Options{}))
	t.Cleanup(srv.Close)
	n, err := nonce.Generate(localdb.DemoHookKey, nonce.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	body := `{"type":"tool_call","function":{"name":"create_ticket","content":{"title":"Cannot sign in"}},
		"context":{"externalUserId":"user-a","metadata":{"request_id":"request-example"}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+httpapi.CallbackPath, strings.NewReader(body))
	req.Header.Set(protocol.NonceHeader, n)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var answer struct {
		Status   string `json:"status"`
		TicketID string `json:"ticket_id"`
	}
	b, _ := io.ReadAll(resp.Body)
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&answer); err != nil || answer.Status != "created" {
		t.Fatalf("quick-start call: %s %v", b, err)
	}
	srv.Client().CloseIdleConnections()
	return answer.TicketID
}

// TestChangeLogSampleIsWhatTheToolWrites: the change log line the
// operations page shows is the one the tool writes for the change it names
// (user grant, off AWS, by ONCECALL_OPERATOR): the same fields in the same
// order, with the same values but for the time, the store and the table.
func TestChangeLogSampleIsWhatTheToolWrites(t *testing.T) {
	_, pages, err := doctest.Load()
	if err != nil {
		t.Fatal(err)
	}
	var sample string
	for _, p := range pages {
		if p.Path != localPage {
			continue
		}
		section, _ := doctest.Section(p.Text, localSection)
		for _, l := range strings.Split(section, "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "{") && strings.Contains(l, `"msg":"oncecall-admin change"`) {
				sample = l
			}
		}
	}
	if sample == "" {
		t.Fatalf("%s's %q shows no change log line", localPage, localSection)
	}
	r := newRig(t)
	r.vars["ONCECALL_OPERATOR"] = "alice"
	r.must(exitOK, "user", "add", "-id", "user-f", "-tenant", "tenant-c", "-name", "frank", "-functions", "get_ticket")
	res := r.must(exitOK, "user", "grant", "-id", "user-f", "-function", "create_ticket")
	var line string
	for _, l := range strings.Split(res.stderr, "\n") {
		if strings.HasPrefix(l, "{") {
			line = l
		}
	}
	keys := func(s string) ([]string, map[string]any) {
		t.Helper()
		dec := json.NewDecoder(strings.NewReader(s))
		var order []string
		if _, err := dec.Token(); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		values := map[string]any{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				t.Fatalf("%q: %v", s, err)
			}
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("%q: %v", s, err)
			}
			order = append(order, k.(string))
			values[k.(string)] = v
		}
		return order, values
	}
	shownKeys, shown := keys(sample)
	gotKeys, got := keys(line)
	if !slices.Equal(shownKeys, gotKeys) {
		t.Fatalf("%s shows the fields %v; the tool writes %v:\n%s", localPage, shownKeys, gotKeys, line)
	}
	for _, k := range gotKeys {
		if k == "time" || k == "target" || k == "table" {
			continue // the page's are make run's store and table
		}
		if fmt.Sprint(shown[k]) != fmt.Sprint(got[k]) {
			t.Errorf("%s shows %s %v; the tool writes %v", localPage, k, shown[k], got[k])
		}
	}
}
