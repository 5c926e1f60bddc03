package localdb_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/localdb"
)

// TestStartServesDynamoDB: the store answers the real SDK as DynamoDB does
// where the project relies on it (a top-level REMOVE, TTL), and Close stops
// the child process: its port no longer answers.
func TestStartServesDynamoDB(t *testing.T) {
	db, err := localdb.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := client(t, db.URL)
	ctx := context.Background()
	if _, err := c.CreateTable(ctx, dynamo.CreateTableInput("ttt")); err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{"pk": s("k")}
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("ttt"), Item: map[string]types.AttributeValue{"pk": s("k"), "x": s("v")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("ttt"), Key: key, UpdateExpression: aws.String("REMOVE x")}); err != nil {
		t.Fatal(err)
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("ttt"), Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := out.Item["x"]; ok {
		t.Fatalf("a top-level REMOVE left the attribute: %v", out.Item)
	}
	if _, err := c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("ttt"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires_at"), Enabled: aws.Bool(true)}}); err != nil {
		t.Fatalf("UpdateTimeToLive: %v", err)
	}
	host := mustHost(t, db.URL)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if conn, err := net.DialTimeout("tcp", host, time.Second); err == nil {
		_ = conn.Close()
		t.Fatalf("the store still answers on %s after Close", host)
	}
}

// TestStartWithFront: a front sees every request, and the store stays
// reachable past it at Direct.
func TestStartWithFront(t *testing.T) {
	var seen atomic.Int64
	db, err := localdb.StartWith("127.0.0.1:0", func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen.Add(1); next.ServeHTTP(w, r) })
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if db.URL == db.Direct {
		t.Fatalf("URL and Direct are both %s", db.URL)
	}
	ctx := context.Background()
	if _, err := client(t, db.URL).CreateTable(ctx, dynamo.CreateTableInput("ttt")); err != nil {
		t.Fatal(err)
	}
	if _, err := client(t, db.Direct).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("ttt")}); err != nil {
		t.Fatal(err)
	}
	if n := seen.Load(); n != 1 {
		t.Fatalf("the front saw %d requests, want 1 (the other went to Direct)", n)
	}
}

// TestStartOnATakenPort says so, as net.Listen does.
func TestStartOnATakenPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	if db, err := localdb.Start(ln.Addr().String()); err == nil {
		_ = db.Close()
		t.Fatal("Start on a taken port succeeded")
	}
}

// TestStartOnAPortTakenAfterThePick: another process takes the port Start
// picked before dynoxide binds it; Start gives dynoxide another port, and
// the store it returns is that dynoxide.
func TestStartOnAPortTakenAfterThePick(t *testing.T) {
	var picks []string
	var taken net.Listener
	defer localdb.SetTestHookPicked(func(addr string) {
		picks = append(picks, addr)
		if taken != nil {
			return
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Errorf("take %s: %v", addr, err)
			return
		}
		taken = ln
	})()
	db, err := localdb.Start("127.0.0.1:0")
	if taken != nil {
		defer func() { _ = taken.Close() }()
	}
	if err != nil {
		t.Fatalf("Start with its first port taken: %v (ports picked: %v)", err, picks)
	}
	defer func() { _ = db.Close() }()
	if len(picks) != 2 || db.URL != "http://"+picks[1] {
		t.Fatalf("picked %v, serving on %s: want a second pick, served", picks, db.URL)
	}
	if _, err := client(t, db.URL).ListTables(context.Background(), &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}
}

// TestStartFailingOtherwiseIsNotRepeated: a dynoxide that exits for
// another reason than a taken port is not started again on other ports:
// the error is its own.
func TestStartFailingOtherwiseIsNotRepeated(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "dynoxide")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho 'error: no such table store' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(localdb.EnvBinary, bin)
	picks := 0
	defer localdb.SetTestHookPicked(func(string) { picks++ })()
	db, err := localdb.Start("127.0.0.1:0")
	if err == nil {
		_ = db.Close()
		t.Fatal("Start of a failing dynoxide succeeded")
	}
	if picks != 1 || !strings.Contains(err.Error(), "no such table store") {
		t.Fatalf("a failing dynoxide was started on %d ports, want 1; error: %v", picks, err)
	}
}

// TestBinaryNotFound: with nothing to run, the error says how to get it.
func TestBinaryNotFound(t *testing.T) {
	t.Setenv(localdb.EnvBinary, "")
	t.Setenv("PATH", t.TempDir())
	t.Chdir(t.TempDir())
	if _, err := localdb.Binary(); !errors.Is(err, localdb.ErrNoBinary) {
		t.Fatalf("Binary() = %v, want ErrNoBinary", err)
	}
	t.Setenv(localdb.EnvBinary, "/nonexistent/dynoxide")
	if _, err := localdb.Binary(); err == nil {
		t.Fatal("a DYNOXIDE that does not exist was accepted")
	}
}

func client(t *testing.T, endpoint string) *dynamodb.Client {
	hc := dynamo.HTTPClient()
	t.Cleanup(hc.CloseIdleConnections)
	cfg := dynamo.LocalConfig("us-east-1")
	cfg.HTTPClient = hc
	return dynamodb.NewFromConfig(cfg, dynamo.Options(endpoint))
}

func mustHost(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
