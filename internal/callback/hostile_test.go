package callback_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/testing/hostiletest"
)

// TestHostileCatalogue sends every case of the hostile catalogue over HTTP
// to one server and checks its answer, that it wrote nothing, and that it
// disclosed nothing of an operation seeded before the first case. The cases
// run in catalogue order on one table.
func TestHostileCatalogue(t *testing.T) {
	r := newRig(t)
	secret := r.mustCreate(create(hostiletest.Owner, hostiletest.SecretRequestID, hostiletest.SecretArgs))
	nonces, err := hostiletest.NewNonces(localdb.DemoHookKey, testCost)
	if err != nil {
		t.Fatal(err)
	}
	cases := hostiletest.Cases(nonces)
	if len(cases) < 40 {
		t.Fatalf("only %d cases in the catalogue", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			body := bytes.ReplaceAll(c.Body, []byte(hostiletest.SecretPlaceholder), []byte(secret))
			req, err := http.NewRequest(http.MethodPost, r.srv.URL+httpapi.CallbackPath, bytes.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			headers := c.Headers
			if headers == nil {
				headers = []hostiletest.Header{{Name: protocol.NonceHeader, Value: nonces.Valid}}
			}
			for _, h := range headers {
				req.Header[h.Name] = append(req.Header[h.Name], h.Value) // the name as written, on the wire
			}
			tickets, ops := r.tickets(), r.operations()
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			checkHostileAnswer(t, c, res.StatusCode, raw, body, secret)
			if got := r.tickets() - tickets; got != c.Writes {
				t.Errorf("%d tickets written, want %d", got, c.Writes)
			}
			if got := r.operations() - ops; got != c.Writes {
				t.Errorf("%d operations written, want %d", got, c.Writes)
			}
		})
	}
	logs := r.logs.String()
	for _, s := range []string{nonces.Valid, nonces.WrongKey, localdb.DemoHookKey, hostiletest.SecretTitle, "Cannot sign in"} {
		if strings.Contains(logs, s) {
			t.Errorf("the log contains %q", s)
		}
	}
}

// checkHostileAnswer fails the test for every way the answer is wrong.
func checkHostileAnswer(t *testing.T, c hostiletest.Case, status int, raw, sent []byte, secret string) {
	t.Helper()
	for _, w := range c.Check(status, raw, sent, secret) {
		t.Error(w)
	}
}
