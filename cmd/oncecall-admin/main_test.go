package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/dev/dynamotest"
	"github.com/oncecall/oncecall/internal/dev/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
)

func TestNonce(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"nonce", "-cost", "4"}, &out); err != nil {
		t.Fatal(err)
	}
	h := strings.TrimSpace(out.String())
	v, _ := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err := v.Verify(h); err != nil {
		t.Fatalf("nonce %q does not verify: %v", h, err)
	}
	if err := run([]string{"nonce", "-cost", "40"}, &out); err == nil {
		t.Fatal("cost 40 accepted")
	}
}

func TestUsersAndTable(t *testing.T) {
	ep, _ := dynamotest.Endpoint(t)
	t.Setenv("DYNAMODB_ENDPOINT", ep)
	t.Setenv("TABLE_NAME", "admin-test-"+strings.ReplaceAll(t.Name(), "/", "-"))
	var out bytes.Buffer
	if err := run([]string{"table", "create"}, &out); err != nil || !strings.Contains(out.String(), "created=true") {
		t.Fatalf("table create: %v %s", err, out.String())
	}
	out.Reset()
	if err := run([]string{"user", "put", "-id", "user-z", "-tenant", "tenant-z", "-name", "zoe", "-functions", "get_ticket"}, &out); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := run([]string{"user", "get", "-id", "user-z"}, &out); err != nil || !strings.Contains(out.String(), `"Tenant": "tenant-z"`) || !strings.Contains(out.String(), `"get_ticket"`) {
		t.Fatalf("user get: %v %s", err, out.String())
	}
	if err := run([]string{"user", "put", "-id", "user-z", "-tenant", "t", "-functions", "drop_tables"}, &out); err == nil {
		t.Fatal("unknown function accepted")
	}
	if err := run([]string{"user", "put", "-id", "user-z"}, &out); !errors.Is(err, errUsage) {
		t.Fatalf("missing -tenant: %v", err)
	}
	if err := run([]string{"ticket", "get", "-id", "nope"}, &out); err == nil {
		t.Fatal("missing ticket found")
	}
	if err := run([]string{"frobnicate"}, &out); !errors.Is(err, errUsage) {
		t.Fatalf("unknown command: %v", err)
	}
}
