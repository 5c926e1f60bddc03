package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/dev/helpdesk"
	"github.com/oncecall/oncecall/internal/dev/logtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestServesUntilCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var logs logtest.Buffer
	servers := make(chan *helpdesk.Server, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-dedup-window", "0", "-settle-delay", "2s", "-replays-errors"},
			env(map[string]string{"HELPDESK_TOKEN": "tok-SECRET", "HELPDESK_ZENDESK_CREDENTIALS": "a@example.com/token:zd-SECRET"}),
			&logs, func(s *helpdesk.Server) { servers <- s })
	}()
	var s *helpdesk.Server
	select {
	case s = <-servers:
	case err := <-done:
		t.Fatal(err)
	}
	resp, err := http.Get(s.URL() + helpdesk.ControlPath + "/capabilities")
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
