package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

func server(t *testing.T, publicURL string) (*httptest.Server, string) {
	env := dynamotest.New(t)
	store := dynamo.New(env.Client, env.Table)
	v, err := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		t.Fatal(err)
	}
	h := callback.NewHandler(v, store, nil)
	srv := httptest.NewServer(httpapi.New(h, httpapi.Options{PublicURL: publicURL}))
	t.Cleanup(srv.Close)
	n, err := nonce.Generate(localdb.DemoHookKey, nonce.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return srv, n
}

func send(t *testing.T, method, url, nonceHeader string, body io.Reader) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if nonceHeader != "" {
		req.Header.Set("x-REQUEST-nonce", nonceHeader) // header names are case-insensitive
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res, string(b)
}

func TestRoutes(t *testing.T) {
	srv, n := server(t, "")
	cases := []struct {
		method, path string
		status       int
		says         string
	}{
		{http.MethodGet, "/callback", 405, "use POST"},
		{http.MethodPost, "/functions", 405, "use GET"},
		{http.MethodGet, "/", 404, "oncecall serves POST /callback, GET /functions and POST /mcp"},
		{http.MethodGet, "/mcp", 405, "use POST"},
		{http.MethodGet, "/functions", 200, `"callbackUrl":"` + srv.URL + `/callback"`},
	}
	for _, c := range cases {
		res, body := send(t, c.method, srv.URL+c.path, n, nil)
		if res.StatusCode != c.status || !strings.Contains(body, c.says) {
			t.Errorf("%s %s = %d %s", c.method, c.path, res.StatusCode, body)
		}
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", c.method, c.path, ct)
		}
	}
	if res, _ := send(t, http.MethodGet, srv.URL+"/functions", "", nil); res.StatusCode != http.StatusUnauthorized {
		t.Errorf("listing without a nonce = %d", res.StatusCode)
	}
}

func TestPublicURLNamesTheCallback(t *testing.T) {
	srv, n := server(t, "https://example.test/prod/")
	_, body := send(t, http.MethodGet, srv.URL+"/functions", n, nil)
	if !strings.Contains(body, `"callbackUrl":"https://example.test/prod/callback"`) {
		t.Fatalf("listing %s", body)
	}
}

// TestOversizedBodyIsNotReadWhole sends far more than the limit and checks
// the answer names the limit; the server reads only one byte past it.
func TestOversizedBodyIsNotReadWhole(t *testing.T) {
	srv, n := server(t, "")
	huge := strings.NewReader(strings.Repeat("x", 8*protocol.MaxBodyBytes))
	res, body := send(t, http.MethodPost, srv.URL+"/callback", n, huge)
	if res.StatusCode != http.StatusOK || !strings.Contains(body, `"code":"too_large"`) || !strings.Contains(body, "limit of 131072 bytes") {
		t.Fatalf("oversized body: %d %s", res.StatusCode, body)
	}
}

// TestLocalServerRefusesWebPages: the local server, as cmd/oncecall wires
// it on loopback, refuses on every route a request naming another Host (a
// DNS-rebinding page) or carrying another Origin, and writes nothing; a
// program's request on loopback is served.
func TestLocalServerRefusesWebPages(t *testing.T) {
	env := dynamotest.New(t)
	store := dynamo.New(env.Client, env.Table)
	if _, err := localdb.SeedDemo(t.Context(), store); err != nil {
		t.Fatal(err)
	}
	v, err := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		t.Fatal(err)
	}
	api := httpapi.New(callback.NewHandler(v, store, nil), httpapi.Options{Local: true, LoopbackHost: true})
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	n, err := nonce.Generate(localdb.DemoHookKey, nonce.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	create := `{"function":{"name":"create_ticket","content":{"title":"from a web page"}},"context":{"externalUserId":"user-a","metadata":{"request_id":"web-1"}}}`
	mcpList := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	do := func(method, path, host, origin, body string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		req.Header.Set("X-Request-Nonce", n)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	own := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct{ method, path, host, origin, body, says string }{
		{"POST", "/callback", "attacker.example:80", "http://attacker.example", create, "host_not_loopback"},
		{"GET", "/functions", "attacker.example", "", "", "host_not_loopback"},
		{"POST", "/mcp", "attacker.example", "", mcpList, "host_not_loopback"},
		{"POST", "/callback", own, "https://evil.example", create, "cross_origin"},
		{"GET", "/functions", own, "null", "", "cross_origin"},
		{"POST", "/mcp", own, "https://evil.example", mcpList, "Origin"},
	} {
		status, body := do(c.method, c.path, c.host, c.origin, c.body)
		if status != http.StatusForbidden || !strings.Contains(body, c.says) || len(body) > 1024 {
			t.Errorf("%s %s Host %s Origin %q: %d %s, want 403 %s", c.method, c.path, c.host, c.origin, status, body, c.says)
		}
	}
	if got := env.Count(t, "ticket"); got != 0 {
		t.Errorf("%d tickets written by web pages", got)
	}
	for _, host := range []string{own, "localhost:1", "[::1]:3210"} {
		if status, body := do("GET", "/functions", host, "", ""); status != http.StatusOK {
			t.Errorf("Host %s: %d %s", host, status, body)
		}
	}
	if status, body := do("POST", "/callback", own, "http://"+own, create); status != http.StatusOK || !strings.Contains(body, "created") {
		t.Errorf("same-origin create: %d %s", status, body)
	}
}

// TestDocsSayTheLocalServerRefusesWebPages: SECURITY.md's and
// docs/troubleshooting.md's sentences name the codes and the test above.
func TestDocsSayTheLocalServerRefusesWebPages(t *testing.T) {
	for file, want := range map[string]string{
		"../../SECURITY.md":             "a request with an `Origin` that is not its own (`403 cross_origin`) and, listening on loopback, a `Host` that is neither a loopback name nor `PUBLIC_URL`'s (`403 host_not_loopback`, a DNS-rebinding page) [`TestLocalServerRefusesWebPages`]",
		"../../docs/troubleshooting.md": "## `403 host_not_loopback` or `403 cross_origin` from the local server",
	} {
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(strings.Join(strings.Fields(string(raw)), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("%s no longer says %q", file, want)
		}
	}
	if httpapi.CodeCrossOrigin != "cross_origin" || httpapi.CodeHostNotLoopback != "host_not_loopback" {
		t.Error("the codes the docs name changed")
	}
}
