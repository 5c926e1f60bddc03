package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/outcome"
)

// TestFindUserAgreesWithTheOutcomeRead: for every operation of a table
// (the first and a second under one id, another user's id, an id never
// sent), find -user -request -json prints what GET /outcome answers, byte
// for byte once both are compacted: one function serves both.
func TestFindUserAgreesWithTheOutcomeRead(t *testing.T) {
	r := newRig(t)
	alice, bob := localdb.DemoUsers[0], localdb.DemoUsers[1]
	now := time.Now().UTC()
	first := created(t, r.env, alice, strings.Repeat("a", 64), "req-1", "", now)
	created(t, r.env, alice, strings.Repeat("b", 64), "req-1", "other arguments", now.Add(time.Second))
	created(t, r.env, bob, strings.Repeat("c", 64), "req-2", "", now)
	h := &outcome.Handler{Reader: outcome.Reader{Store: dynamo.New(r.env.Client, r.env.Table)}}
	for _, c := range [][2]string{{"user-a", "req-1"}, {"user-b", "req-2"}, {"user-a", "req-2"}, {"user-b", "req-1"}, {"user-a", "never"}} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", outcome.Path+"?"+url.Values{"user": {c[0]}, "request_id": {c[1]}}.Encode(), nil))
		read, _ := io.ReadAll(w.Result().Body)
		found := r.must(exitOK, "find", "-user", c[0], "-request", c[1], "-json").stdout
		if compact(t, found) != string(read) {
			t.Errorf("%s %s: find prints %s, GET /outcome answers %s", c[0], c[1], found, read)
		}
	}
	if res := r.must(exitOK, "find", "-user", "user-a", "-request", "req-1"); !strings.Contains(res.stdout, first.ID) || !strings.Contains(res.stdout, "create_ticket") {
		t.Errorf("find -user:\n%s", res.stdout)
	}
	r.must(exitUsage, "find", "-user", "user-a")
	r.must(exitUsage, "find", "-user", "user-a", "-request", "r", "-tenant", "tenant-a")
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
