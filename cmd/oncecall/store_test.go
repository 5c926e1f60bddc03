package main

import (
	"errors"
	"flag"
	"net"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
)

// TestDeadEndpointSaysWhichWon: a start whose DYNAMODB_ENDPOINT names a
// store that does not answer (here a listener of the test's own that
// closes every connection unanswered) fails saying so, where, which
// setting named it and that it won over DB_ADDR, and how to have the local
// store, as oncecall-admin says it, never the SDK's error type.
func TestDeadEndpointSaysWhichWon(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	endpoint := "http://" + ln.Addr().String()
	t.Setenv(config.EnvEndpoint, endpoint)
	for _, k := range []string{config.EnvDestination, config.EnvDestinationURL} {
		t.Setenv(k, "")
	}

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-db-addr", "127.0.0.1:8100"}, []string{
			"no store answers at " + endpoint,
			"from DYNAMODB_ENDPOINT, which wins over -db-addr 127.0.0.1:8100 (DB_ADDR)",
			"unset DYNAMODB_ENDPOINT to start the local store on 127.0.0.1:8100",
		}},
		{nil, []string{
			"no store answers at " + endpoint + " (from DYNAMODB_ENDPOINT)",
			"unset DYNAMODB_ENDPOINT to start the local store on 127.0.0.1:8000",
		}},
	} {
		fs := flag.NewFlagSet("oncecall", flag.ContinueOnError)
		_, dbAddr, _ := addFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := run("127.0.0.1:0", *dbAddr, helpdesk.DefaultAddr)
		if err == nil {
			t.Fatalf("%v: the start succeeded against a store that closes every connection", c.args)
		}
		msg := explainStore(err, fs, endpoint).Error()
		for _, w := range c.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%v: the start says %q, not %q", c.args, msg, w)
			}
		}
		if strings.Contains(msg, "ResponseError") {
			t.Errorf("%v: the start names the SDK's error type: %q", c.args, msg)
		}
	}

	// Any other failure passes as it is.
	other := errors.New("config: RETENTION must be a duration")
	if got := explainStore(other, flag.NewFlagSet("oncecall", flag.ContinueOnError), endpoint); got != other {
		t.Errorf("another error became %q", got)
	}
}
