package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/eventset"
	"github.com/oncecall/oncecall/internal/testing/hostiletest"
	"github.com/oncecall/oncecall/internal/testing/logtest"
	"github.com/oncecall/oncecall/internal/testing/samtest"
)

// samePathsURL is the API's public URL in both environments, so that the
// listing names the same callback.
const samePathsURL = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"

// side is one transport serving the function's router: the real bootstrap
// under the emulator, fed API Gateway events, or the same router served
// over net/http, fed the HTTP requests those events stand for.
type side struct {
	name string
	// serve answers one event, with the output lines its call wrote.
	serve func(t *testing.T, i int, ev events.APIGatewayV2HTTPRequest) (reply, []string)
	// ids maps each ticket id this side returned, in order of first
	// appearance, to a name both sides share.
	ids map[string]string
}

// reply is what a client sees: the status, the headers that are not
// the transport's own bookkeeping, and the body.
type reply struct {
	Status int
	Header map[string]string
	Body   string
}

// transportHeaders are added by the HTTP server or by API Gateway itself,
// not by the router.
var transportHeaders = []string{"date", "content-length", "connection"}

var (
	uuidPattern = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`)
	timePattern = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
)

// normal names this side's ticket ids in order of appearance and its
// clock's times, the two things two stores cannot share.
func (s *side) normal(a reply) reply {
	a.Body = uuidPattern.ReplaceAllStringFunc(a.Body, func(id string) string {
		if n, ok := s.ids[id]; ok {
			return n
		}
		s.ids[id] = fmt.Sprintf("<ticket %d>", len(s.ids)+1)
		return s.ids[id]
	})
	a.Body = timePattern.ReplaceAllString(a.Body, "<time>")
	return a
}

// ticketID is the id this side knows under name.
func (s *side) ticketID(name string) string {
	for id, n := range s.ids {
		if n == name {
			return id
		}
	}
	return ""
}

// lambdaSide invokes the real bootstrap under the emulator, with the
// configuration make invoke uses.
func lambdaSide(t *testing.T, env map[string]string) *side {
	e := bins.StartEmulator(t, env)
	return &side{name: "Lambda (bootstrap under the emulator)", ids: map[string]string{}, serve: func(t *testing.T, i int, ev events.APIGatewayV2HTTPRequest) (reply, []string) {
		raw, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		inv := invoke(t, e, fmt.Sprintf("path-%03d", i), raw)
		resp := answer(t, inv)
		a := reply{Status: resp.StatusCode, Header: map[string]string{}, Body: resp.Body}
		if resp.IsBase64Encoded {
			b, _ := base64.StdEncoding.DecodeString(resp.Body)
			a.Body = string(b)
		}
		for k, v := range resp.Headers {
			if !slices.Contains(transportHeaders, strings.ToLower(k)) {
				a.Header[strings.ToLower(k)] = v
			}
		}
		return a, inv.Output
	}}
}

// localSide serves the router the function wires (router, from the same
// environment) over net/http on loopback, as cmd/oncecall serves it, and
// sends each event as the HTTP request API Gateway received.
func localSide(t *testing.T, env map[string]string) *side {
	logs := &logtest.Buffer{}
	api, _, err := router(context.Background(), func(k string) string { return env[k] }, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	client := &http.Client{}
	t.Cleanup(client.CloseIdleConnections)
	base := "http://" + ln.Addr().String()
	return &side{name: "local (net/http)", ids: map[string]string{}, serve: func(t *testing.T, _ int, ev events.APIGatewayV2HTTPRequest) (reply, []string) {
		body := []byte(ev.Body)
		if ev.IsBase64Encoded {
			if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
				t.Fatalf("the event's body is not base64: %v", err)
			}
		}
		method, path := ev.RequestContext.HTTP.Method, ev.RawPath
		if st := ev.RequestContext.Stage; st != "" && st != "$default" {
			path = strings.TrimPrefix(path, "/"+st)
		}
		req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range ev.Headers {
			if k = strings.ToLower(k); k != "host" && k != "content-length" {
				req.Header.Set(k, v)
			}
		}
		if _, ok := ev.Headers["content-type"]; !ok {
			// Go's client would otherwise send none either way; API
			// Gateway passes what the caller sent.
			req.Header.Del("Content-Type")
		}
		before := len(logs.String())
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		a := reply{Status: res.StatusCode, Header: map[string]string{}, Body: string(b)}
		for k, v := range res.Header {
			if !slices.Contains(transportHeaders, strings.ToLower(k)) {
				a.Header[strings.ToLower(k)] = strings.Join(v, ",")
			}
		}
		return a, strings.Split(strings.TrimSpace(logs.String()[before:]), "\n")
	}}
}

// httpEvent is the payload 2.0 event API Gateway builds for a request to
// path on the $default route: header names in lower case, a repeated
// header's values joined with commas.
func httpEvent(method, path string, headers []hostiletest.Header, body []byte) events.APIGatewayV2HTTPRequest {
	h := map[string]string{"content-type": "application/json", "accept": "application/json, text/event-stream"}
	seen := map[string]bool{}
	for _, x := range headers {
		k := strings.ToLower(x.Name)
		if seen[k] {
			h[k] += "," + x.Value
			continue
		}
		seen[k], h[k] = true, x.Value
	}
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, Headers: h, Body: string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			DomainName: "a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com", Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path, SourceIP: "203.0.113.10"},
		},
	}
	if !utf8.Valid(body) {
		// A JSON event cannot carry these bytes as text: API Gateway
		// base64-encodes such a body.
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}

// request is one row of a response table as an event.
type request struct {
	row string
	ev  events.APIGatewayV2HTTPRequest
	// secret marks a body holding hostiletest.SecretPlaceholder, which
	// each side fills with the ticket it seeded.
	secret bool
}

// TestSameAnswersLocallyAndOnLambda sends the same requests through both
// transports of the one router, each over its own fresh store: every
// event of events/ (the README's response table and the MCP rows), every
// case of the callback's hostile catalogue (the README's table) and of the
// MCP door's (docs/mcp.md's table), and the routes' refusals. The answers
// must be the same, byte for byte, once each side's ticket ids and times
// are named alike: status, body and every header the router sets.
func TestSameAnswersLocallyAndOnLambda(t *testing.T) {
	envOf := func(t *testing.T) map[string]string {
		db, _ := samtest.StartStore(t, testTable)
		env := localEnv(db.URL)
		env[config.EnvPublicURL] = samePathsURL
		return env
	}
	local := envOf(t)
	// In-process, the metric lines would go to the test's own output;
	// they change no answer.
	delete(local, config.EnvMetrics)
	sides := []*side{lambdaSide(t, envOf(t)), localSide(t, local)}

	m, err := eventset.Load(eventsDir)
	if err != nil {
		t.Fatal(err)
	}
	players := []*eventset.Player{m.Player(), m.Player()}
	var reqs []request
	for _, c := range m.Cases {
		reqs = append(reqs, request{row: "events/" + c.Event})
	}
	n, err := hostiletest.NewNonces(localdb.DemoHookKey, nonce.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	valid := []hostiletest.Header{{Name: "X-Request-Nonce", Value: n.Valid}}
	seed := `{"type":"tool_call","function":{"name":"create_ticket","content":` + hostiletest.SecretArgs + `},"context":{"externalUserId":"` +
		hostiletest.Owner + `","metadata":{"request_id":"` + hostiletest.SecretRequestID + `"}}}`
	reqs = append(reqs, request{row: "seed the hostile catalogues' operation", ev: httpEvent(http.MethodPost, "/callback", valid, []byte(seed))})
	for _, c := range hostiletest.Cases(n) {
		hs := c.Headers
		if hs == nil {
			hs = valid
		}
		reqs = append(reqs, request{row: "callback: " + c.Name, ev: httpEvent(http.MethodPost, "/callback", hs, c.Body), secret: true})
	}
	for _, c := range hostiletest.MCPCases(n) {
		reqs = append(reqs, request{row: "mcp: " + c.Name, ev: httpEvent(http.MethodPost, "/mcp", c.Headers, c.Body), secret: true})
	}
	for _, r := range []struct{ method, path string }{{http.MethodGet, "/callback"}, {http.MethodDelete, "/mcp"}, {http.MethodGet, "/mcp"},
		{http.MethodPost, "/functions"}, {http.MethodGet, "/nothing"}, {http.MethodGet, "/functions"}} {
		reqs = append(reqs, request{row: "route: " + r.method + " " + r.path, ev: httpEvent(r.method, r.path, valid, nil)})
	}

	secretRow := "seed the hostile catalogues' operation"
	var secret [2]string
	for i, r := range reqs {
		var got [2]reply
		for j, s := range sides {
			ev := r.ev
			if strings.HasPrefix(r.row, "events/") {
				c := m.Cases[i]
				raw, err := players[j].Event(c)
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(raw, &ev); err != nil {
					t.Fatal(err)
				}
			}
			if r.secret {
				ev.Body = strings.ReplaceAll(ev.Body, hostiletest.SecretPlaceholder, s.ticketID(secret[j]))
			}
			a, output := s.serve(t, i, ev)
			if strings.HasPrefix(r.row, "events/") {
				// Each side meets events/expected.json, and keeps its own
				// ticket ids for the events that name an earlier one.
				resp := events.APIGatewayV2HTTPResponse{StatusCode: a.Status, Headers: a.Header, Body: a.Body}
				if err := players[j].Check(m.Cases[i], eventset.Result{Response: resp, Output: output}); err != nil {
					t.Errorf("%s on %s: %v", r.row, s.name, err)
				}
			}
			got[j] = s.normal(a)
			if r.row == secretRow {
				secret[j] = s.ids[uuidPattern.FindString(a.Body)]
			}
		}
		if got[0].Status != got[1].Status || got[0].Body != got[1].Body || !equalHeaders(got[0].Header, got[1].Header) {
			t.Errorf("%s: the transports answer differently\n%s: %d %v\n%s\n%s: %d %v\n%s", r.row,
				sides[0].name, got[0].Status, got[0].Header, got[0].Body, sides[1].name, got[1].Status, got[1].Header, got[1].Body)
		}
	}
	t.Logf("%d requests answered alike by both transports", len(reqs))
}

func equalHeaders(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
