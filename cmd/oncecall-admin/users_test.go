package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// TestTakingAccessAwaySaysWhatHolds: user disable, user revoke and user
// delete return at once (nothing is waited for: what a late write makes
// is inert) and say what holds from then on, with the bounds it relies
// on; -no-wait is still accepted and changes nothing. The changes that
// give access say nothing of it.
func TestTakingAccessAwaySaysWhatHolds(t *testing.T) {
	r := newRig(t)
	r.vars["ONCECALL_OPERATOR"] = "tester"
	for _, tc := range []struct {
		args []string
		says string // "" for a change that gives access
	}{
		{[]string{"user", "disable", "-id", "user-b"}, "no ticket made under a version before 1 is delivered or shown"},
		{[]string{"user", "disable", "-id", "user-b"}, "no ticket made under a version before 1 is delivered or shown"}, // already disabled
		{[]string{"user", "revoke", "-id", "user-a", "-function", "create_ticket"}, "no ticket made under a version before 1 is delivered or shown"},
		{[]string{"user", "delete", "-id", "user-c"}, "no ticket of the user is delivered or shown"},
		{[]string{"user", "disable", "-id", "user-e", "-no-wait"}, "no ticket made under a version before 1 is delivered or shown"},
		{[]string{"user", "enable", "-id", "user-b"}, ""},
		{[]string{"user", "grant", "-id", "user-a", "-function", "create_ticket"}, ""},
		{[]string{"user", "rename", "-id", "user-a", "-name", "Alice"}, ""},
	} {
		r.waits = nil
		res := r.must(exitOK, tc.args...)
		if len(r.waits) != 0 {
			t.Errorf("%v waited %v", tc.args, r.waits)
		}
		if tc.says == "" {
			if strings.Contains(res.stdout, "is refused") {
				t.Errorf("%v printed what a revocation prints:\n%s", tc.args, res.stdout)
			}
			continue
		}
		bounds := fmt.Sprintf("until its deadline (%s), and a delivery attempt already past its check may finish within its lease (%s)", callback.Deadline, delivery.DefaultPolicy.LeaseFor())
		if !strings.Contains(res.stdout, tc.says+", however late its write lands") || !strings.Contains(res.stdout, bounds) {
			t.Errorf("%v printed:\n%s", tc.args, res.stdout)
		}
	}
	r.must(exitUsage, "user", "enable", "-id", "user-a", "-no-wait")
}

// TestUserDelete: a delete is one conditional write of the record read,
// logged; a delete from a read another change passed is refused; a delete
// of a user already gone says so.
func TestUserDelete(t *testing.T) {
	r := newRig(t)
	proxy := dynamotest.NewProxy(t, r.env.Endpoint)
	r.vars["DYNAMODB_ENDPOINT"] = proxy.URL
	r.vars["ONCECALL_OPERATOR"] = "tester"
	r.must(exitConflict, "user", "delete", "-id", "user-b", "-version", "3")
	if r.userItem("user-b") == nil {
		t.Fatal("a refused delete deleted")
	}
	res := r.must(exitOK, "user", "delete", "-id", "user-b", "-version", "0")
	if r.userItem("user-b") != nil {
		t.Fatal("user-b is still there")
	}
	if n := proxy.Seen("DeleteItem"); n != 1 {
		t.Errorf("%d DeleteItem requests, want 1", n)
	}
	logs := changeLines(t, res.stderr)
	if len(logs) != 1 || logs[0].Action != "user.delete" || logs[0].UserID != "user-b" || logs[0].After != nil || logs[0].Before == nil {
		t.Errorf("delete logged %+v", logs)
	}
	if !strings.Contains(res.stdout, "deleted user user-b (version 0)") {
		t.Errorf("delete printed %s", res.stdout)
	}
	// The record it prints is the one it removed, shown as removed, with
	// or without the wait.
	r.must(exitOK, "user", "add", "-id", "user-g", "-tenant", "acme", "-functions", "create_ticket")
	quick := r.must(exitOK, "user", "delete", "-id", "user-g", "-no-wait")
	if !regexp.MustCompile(`(?m)^state\s+deleted \(was active\)$`).MatchString(quick.stdout) {
		t.Errorf("delete -no-wait printed the deleted record as\n%s", quick.stdout)
	}
	js := r.must(exitOK, "user", "delete", "-id", "user-c", "-no-wait", "-json")
	if !strings.Contains(js.stdout, `"deleted": true`) {
		t.Errorf("delete -json printed %s", js.stdout)
	}
	r.waits = nil
	gone := r.must(exitNotFound, "user", "delete", "-id", "user-b")
	if !strings.Contains(gone.stderr, "no user user-b") || len(r.waits) != 0 || len(changeLines(t, gone.stderr)) != 0 {
		t.Errorf("delete of a deleted user: %s, waits %v", gone.stderr, r.waits)
	}
}

// TestUserAddRunAgain: an add run again finds the user exactly as asked
// and says so (exit 0, nothing written); an add that differs is refused.
func TestUserAddRunAgain(t *testing.T) {
	r := newRig(t)
	r.vars["ONCECALL_OPERATOR"] = "tester"
	add := []string{"user", "add", "-id", "user-f", "-tenant", "tenant-c", "-name", "frank", "-functions", "get_ticket,create_ticket"}
	r.must(exitOK, add...)
	before := r.items()
	again := r.must(exitOK, append(add, "-json")...)
	var c changed
	if err := json.Unmarshal([]byte(again.stdout), &c); err != nil || c.Changed || c.User.Tenant != "tenant-c" {
		t.Errorf("add run again: %s (%v)", again.stdout, err)
	}
	if len(changeLines(t, again.stderr)) != 0 {
		t.Errorf("add run again logged a change: %s", again.stderr)
	}
	if d := sameItems(before, r.items()); d != "" {
		t.Errorf("add run again changed %s", d)
	}
	r.must(exitConflict, "user", "add", "-id", "user-f", "-tenant", "tenant-c", "-name", "frank", "-functions", "get_ticket")
}

// TestTableRemoveGrantCopies: the copies an earlier version wrote are
// deleted, the users are not, and the command says how many; user
// sync-grants, which made them, is gone and says what replaced it.
func TestTableRemoveGrantCopies(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	for i := range 30 {
		_, err := r.env.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(r.env.Table), Item: map[string]types.AttributeValue{
			"pk":   &types.AttributeValueMemberS{Value: fmt.Sprintf("grant#user-a#%d", i)},
			"kind": &types.AttributeValueMemberS{Value: "grant"},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	res := r.must(exitOK, "table", "remove-grant-copies", "-json")
	var out struct {
		Removed int `json:"removed"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || out.Removed != 30 {
		t.Fatalf("remove-grant-copies: %s (%v)", res.stdout, err)
	}
	if n := r.env.Count(t, "grant"); n != 0 {
		t.Errorf("%d copies left", n)
	}
	if n := r.env.Count(t, "user"); n != 5 {
		t.Errorf("%d users left, want 5", n)
	}
	if logs := changeLines(t, res.stderr); len(logs) != 1 || logs[0].Action != "table.remove_grant_copies" {
		t.Errorf("logged %+v", logs)
	}
	if again := r.must(exitOK, "table", "remove-grant-copies"); !strings.Contains(again.stdout, "removed 0 copies") {
		t.Errorf("a second run: %s", again.stdout)
	}
	gone := r.must(exitUsage, "user", "sync-grants", "-operator", "tester")
	if !strings.Contains(gone.stderr, "table remove-grant-copies") {
		t.Errorf("user sync-grants: %s", gone.stderr)
	}
	if r.env.Count(t, "grant") != 0 {
		t.Error("the removed command wrote copies")
	}
}
