package loadtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
)

// readmeQuickStart returns the quick start's create_ticket body and the
// reordered content the README suggests trying, as README.md prints them.
func readmeQuickStart(t *testing.T) (body, reordered, getTicket string) {
	t.Helper()
	raw, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	find := func(what string, re *regexp.Regexp) string {
		t.Helper()
		m := re.FindStringSubmatch(readme)
		if m == nil {
			t.Fatalf("README.md has no %s (%s)", what, re)
		}
		return m[1]
	}
	body = find("quick-start body", regexp.MustCompile(`(?s)--data '(\{\s*"type": "tool_call".*?\})'`))
	reordered = find("reordered content", regexp.MustCompile("(?s)reorder the members of `content` \\(`(\"content\": \\{.*?\\})`"))
	getTicket = find("get_ticket body", regexp.MustCompile(`(?s)--data \\\s*'(\{"function":\{"name":"get_ticket".*?\}\})' \\`))
	getTicket = strings.Replace(getTicket, `"'"$TICKET_ID"'"`, `"<id>"`, 1)
	return body, reordered, getTicket
}

// TestReadmeQuickStart tries the quick start and the rows it suggests
// against the real server, as a new user would with curl: the same call
// twice, the content's members reordered, the title changed, the other
// demo users, no nonce, and the ticket read back.
func TestReadmeQuickStart(t *testing.T) {
	body, reordered, getTicket := readmeQuickStart(t)
	var call struct {
		Function struct {
			Content map[string]any `json:"content"`
		} `json:"function"`
	}
	if err := json.Unmarshal([]byte(body), &call); err != nil {
		t.Fatalf("the quick-start body is not JSON: %v\n%s", err, body)
	}
	if len(call.Function.Content) < 2 {
		t.Fatalf("the quick-start content has %d member(s): reordering them cannot be tried", len(call.Function.Content))
	}
	s := startServer(t)
	post := func(nonce, body string) (int, map[string]any) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, s.URL+"/callback", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if nonce != "" {
			req.Header.Set("X-Request-Nonce", nonce)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		raw, _ := io.ReadAll(res.Body)
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("answer is not JSON: %s", raw)
		}
		return res.StatusCode, out
	}
	code := func(a map[string]any) string {
		e, _ := a["error"].(map[string]any)
		c, _ := e["code"].(string)
		return c
	}
	nonce := validNonce(t)

	st, first := post(nonce, body)
	if st != 200 || first["status"] != "created" || first["deduplicated"] != false {
		t.Fatalf("first call: %d %v", st, first)
	}
	id, _ := first["ticket_id"].(string)
	if st, again := post(nonce, body); st != 200 || again["deduplicated"] != true || again["ticket_id"] != id {
		t.Fatalf("second call: %d %v", st, again)
	}
	contentMember := regexp.MustCompile(`(?s)"content": \{.*?\}`)
	if !contentMember.MatchString(body) {
		t.Fatalf("no content member in %s", body)
	}
	if st, r := post(nonce, contentMember.ReplaceAllLiteralString(body, reordered)); st != 200 || r["deduplicated"] != true || r["ticket_id"] != id {
		t.Fatalf("members reordered: %d %v; want ticket %s deduplicated", st, r, id)
	}
	if st, r := post(nonce, strings.Replace(body, `"Cannot sign in"`, `"Cannot sign in today"`, 1)); st != 200 || r["deduplicated"] != false || r["ticket_id"] == id {
		t.Fatalf("title changed: %d %v; want a new ticket", st, r)
	}
	as := func(user string) string {
		return strings.Replace(body, `"externalUserId": "user-a"`, `"externalUserId": "`+user+`"`, 1)
	}
	if st, r := post(nonce, as("user-b")); st != 403 || code(r) != "request_id_conflict" {
		t.Fatalf("user-b, same request id: %d %v", st, r)
	}
	if st, r := post(nonce, as("user-c")); st != 200 || r["status"] != "created" || r["deduplicated"] != false || r["ticket_id"] == id {
		t.Fatalf("user-c (tenant B): %d %v", st, r)
	}
	if st, r := post(nonce, as("user-d")); st != 403 || code(r) != "user_disabled" {
		t.Fatalf("user-d (disabled): %d %v", st, r)
	}
	if st, r := post("", body); st != 401 {
		t.Fatalf("no nonce: %d %v", st, r)
	}
	if st, r := post(nonce, strings.Replace(getTicket, "<id>", id, 1)); st != 200 || r["status"] != "found" {
		t.Fatalf("get_ticket by user-b: %d %v", st, r)
	}
}
