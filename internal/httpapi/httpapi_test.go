package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
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
	srv := httptest.NewServer(httpapi.New(h, publicURL))
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
