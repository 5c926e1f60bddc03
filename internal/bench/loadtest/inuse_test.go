package loadtest_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestSecondRunNamesTheAddressInUse: a server started while another holds
// one of its addresses (a second make run) exits with an error that names
// the address, says an earlier make run may still be running, and names
// the make variable and the flag that move this one: for the local
// helpdesk, the store and the callback alike.
func TestSecondRunNamesTheAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().String()
	for _, c := range []struct {
		name  string
		flags []string
		env   []string
		says  []string
	}{
		{"the local helpdesk", []string{"-addr", "127.0.0.1:0", "-db-addr", "127.0.0.1:0", "-helpdesk-addr", taken}, []string{"DESTINATION=webhook"},
			[]string{"the local helpdesk cannot listen on " + taken, "already in use", "earlier server (make run) still running", "make run HELPDESK_ADDR=HOST:PORT", "-helpdesk-addr HOST:PORT", "DESTINATION_URL"}},
		{"the store", []string{"-addr", "127.0.0.1:0", "-db-addr", taken}, nil,
			[]string{"the local store cannot listen on " + taken, "earlier server (make run) still running", "make run DB_ADDR=HOST:PORT", "-db-addr HOST:PORT", "DYNAMODB_ENDPOINT"}},
		{"the callback", []string{"-addr", taken, "-db-addr", "127.0.0.1:0"}, nil,
			[]string{"the callback cannot listen on " + taken, "earlier server (make run) still running", "make run ADDR=HOST:PORT", "-addr HOST:PORT"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, serverBin, c.flags...)
			for _, kv := range os.Environ() {
				if name, _, _ := strings.Cut(kv, "="); !strings.HasPrefix(name, "DESTINATION") && !strings.HasPrefix(name, "DELIVERY_") &&
					name != "DYNAMODB_ENDPOINT" && name != "TABLE_NAME" && name != "HOOK_KEY" {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, c.env...)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("exit %v, want 1\n%s", err, out)
			}
			last := strings.TrimSpace(string(out))
			if i := strings.LastIndex(last, "\n"); i >= 0 {
				last = last[i+1:]
			}
			for _, want := range c.says {
				if !strings.Contains(last, want) {
					t.Errorf("%q does not say %q", last, want)
				}
			}
		})
	}
}
