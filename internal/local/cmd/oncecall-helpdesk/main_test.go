package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/testing/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestServesUntilCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var logs logtest.Buffer
	servers := make(chan *helpdesk.Server, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-dedup-window", "0", "-lookup", "-settle-delay", "2s", "-replays-errors"},
			env(map[string]string{"HELPDESK_TOKEN": "tok-SECRET", "HELPDESK_ZENDESK_CREDENTIALS": "a@example.com/token:zd-SECRET"}),
			&logs, func(s *helpdesk.Server) { servers <- s })
	}()
	var s *helpdesk.Server
	select {
	case s = <-servers:
	case err := <-done:
		t.Fatal(err)
	}
	// The control API has an address of its own besides (a free port
	// with -addr moved), which a refuse fault leaves open.
	if s.ControlURL() == s.URL() {
		t.Errorf("no control address of its own: %s", s.ControlURL())
	}
	resp, err := http.Get(s.ControlURL() + helpdesk.ControlPath + "/capabilities")
	if err != nil {
		t.Fatal(err)
	}
	var caps map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&caps)
	resp.Body.Close()
	if caps["dedup_window"] != "0s" || caps["lookup"] != true || caps["settle_delay"] != "2s" || caps["replays_errors"] != true {
		t.Fatalf("capabilities = %v", caps)
	}
	req, _ := http.NewRequest("POST", s.WebhookURL(), strings.NewReader(`{"external_id":"x","title":"T"}`))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Fatalf("create without the token = %d", resp.StatusCode)
	}
	http.DefaultClient.CloseIdleConnections()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("run did not return")
	}
	out := logs.String()
	if !strings.Contains(out, `"webhook_auth":true`) || !strings.Contains(out, `"status":401`) || strings.Contains(out, "SECRET") {
		t.Fatalf("logs: %s", out)
	}
}

func TestRefusesBadStarts(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"-dedup-window", "soon"}, nil},
		{[]string{"-settle-delay", "-1s", "-addr", "127.0.0.1:0"}, nil},
		{[]string{"extra"}, nil},
		{[]string{"-addr", "127.0.0.1:0"}, map[string]string{"HELPDESK_ZENDESK_CREDENTIALS": "{bad-SECRET"}},
	} {
		var out bytes.Buffer
		err := run(context.Background(), c.args, env(c.env), &out, nil)
		if err == nil {
			t.Errorf("run(%v) started", c.args)
		} else if strings.Contains(err.Error()+out.String(), "SECRET") {
			t.Errorf("run(%v) quoted the credentials: %v", c.args, err)
		}
	}
}

// TestDefaultsAreMakeRuns: started without flags, the helpdesk behaves as
// the one `make run DESTINATION=webhook` starts, which declares the
// webhook's capabilities from DESTINATION_DEDUP_WINDOW and
// DESTINATION_LOOKUP left unset: it neither deduplicates nor answers
// lookups, the strictest webhook.
func TestDefaultsAreMakeRuns(t *testing.T) {
	base := config.Defaults // as cmd/oncecall loads it
	base.HookKey = localdb.DemoHookKey
	local, err := config.Load(env(map[string]string{config.EnvDestination: config.DestinationWebhook, config.EnvDestinationURL: "http://" + helpdesk.DefaultAddr + helpdesk.WebhookPath}),
		base, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := delivery.Capabilities{DedupWindow: local.Delivery.DedupWindow, Lookup: local.Delivery.Lookup}
	if want != (delivery.Capabilities{}) {
		t.Fatalf("make run's webhook now declares %+v; the helpdesk's defaults must follow", want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	servers := make(chan *helpdesk.Server, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-control-addr", "none", "-quiet"}, env(nil), io.Discard, func(s *helpdesk.Server) { servers <- s })
	}()
	select {
	case s := <-servers:
		if got := s.Capabilities(); got != want {
			t.Errorf("capabilities without flags = %+v, want make run's %+v", got, want)
		}
	case err := <-done:
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
