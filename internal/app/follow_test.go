package app_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/secret"
	"github.com/oncecall/oncecall/internal/ticket"
)

// TestDestinationFollowsItsSecret: a rotated helpdesk token reaches a warm
// worker within secret.RefreshInterval; a failed read or an unusable value
// keeps the last good credentials, and is tried again after
// secret.RetryInterval. The clock is a fake.
func TestDestinationFollowsItsSecret(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":"1"}`))
	}))
	defer srv.Close()
	d := config.Delivery{Destination: config.DestinationWebhook, URL: srv.URL, Token: "token-one", Timeout: time.Second}
	dest, err := app.Destination(d)
	if err != nil {
		t.Fatal(err)
	}
	w := &delivery.Worker{Destination: dest}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	value, readErr, reads := "token-one", error(nil), 0
	read := func(context.Context) (string, error) { reads++; return value, readErr }
	f := app.NewDestinationFollower(d, w, read, func() time.Time { return now }, nil)
	send := func() string {
		t.Helper()
		if r := w.Destination.Create(context.Background(), "k", ticket.Ticket{ID: "t", Title: "x"}); r.Outcome != delivery.Created {
			t.Fatalf("Create = %+v", r)
		}
		mu.Lock()
		defer mu.Unlock()
		return auth[len(auth)-1]
	}
	step := func(d time.Duration, wantAuth string, wantReads int, when string) {
		t.Helper()
		now = now.Add(d)
		f.Refresh(context.Background())
		if got := send(); got != wantAuth || reads != wantReads {
			t.Errorf("%s: sent %q after %d reads, want %q after %d", when, got, reads, wantAuth, wantReads)
		}
	}
	step(0, "Bearer token-one", 0, "at cold start")
	value = "token-two"
	step(secret.RefreshInterval-time.Second, "Bearer token-one", 0, "before the interval")
	step(time.Second, "Bearer token-two", 1, "once the interval has passed")
	step(time.Second, "Bearer token-two", 1, "right after a read")
	readErr = errors.New("read destination secret: throttled")
	step(secret.RefreshInterval, "Bearer token-two", 2, "a failed read")
	step(time.Second, "Bearer token-two", 2, "before the retry")
	readErr, value = nil, "bad\x01token"
	step(secret.RetryInterval, "Bearer token-two", 3, "an unusable value")
	value = "token-three"
	step(secret.RetryInterval, "Bearer token-three", 4, "a good value after the retry")
	if c, ok := w.Destination.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
