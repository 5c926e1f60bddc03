package loadtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/bench/loadtest"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/rt"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/rtlocal"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/testing/suitetest"
)

// TestBothDoorsDeliverToRT: a ticket created through either door, the
// Protocol Function callback or the MCP server, reaches a real Request
// Tracker exactly once, with oncecall's tenant and user in its fields:
// from `make run DESTINATION=rt` as the README runs it (the server starts
// its own RT), and through the fault proxy losing the answer of every
// first create after RT made the ticket.
func TestBothDoorsDeliverToRT(t *testing.T) {
	rtlocal.Require(t)
	t.Run("make run DESTINATION=rt", func(t *testing.T) {
		s := startServer(t, "DESTINATION=rt", "DELIVERY_SWEEP_INTERVAL=1s")
		if s.RT == "" {
			t.Fatalf("the server started no Request Tracker:\n%s", s.Logs())
		}
		ids := checkDoors(t, s, func(r *http.Request) { r.SetBasicAuth("root", rtlocal.RootPassword) }, s.RT)
		// The README's repeat: the same call answers delivered, with RT's
		// ticket and where a person opens it.
		a := callAnswer(t, s.URL+"/callback", validNonce(t), callbackCreate(ids.rid+"-cb"))
		d, _ := a["delivery"].(map[string]any)
		if a["deduplicated"] != true || a["ticket_id"] != ids.ids[0] || d["state"] != "delivered" ||
			d["helpdesk_id"] == nil || d["url"] != s.RT+rt.DisplayPath+fmt.Sprint(d["helpdesk_id"]) {
			t.Fatalf("the repeat answered %v", a)
		}
	})
	t.Run("answers lost after RT made the ticket", func(t *testing.T) {
		in, err := rtlocal.Start("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = in.Close() })
		proxy, err := in.StartProxy(helpdesk.ProxyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = proxy.Close() })
		if err := proxy.Inject(helpdesk.Fault{Kind: helpdesk.LoseAnswer, Count: 2}); err != nil {
			t.Fatal(err)
		}
		s := startServer(t, "DESTINATION=rt", "DESTINATION_URL="+proxy.URL, "DESTINATION_TOKEN="+in.Token, "RT_QUEUE="+in.Queue,
			"DESTINATION_TIMEOUT=3s", "DELIVERY_SWEEP_INTERVAL=1s")
		checkDoors(t, s, func(r *http.Request) { r.Header.Set("Authorization", "token "+in.Token) }, in.URL)
		if n := proxy.Counts(); n.Creates != 2 || n.Faults != 2 {
			t.Fatalf("through the proxy: %+v; want two creates, both answers lost", n)
		}
	})
}

// doorTickets are the tickets checkDoors made, callback's first, and the
// request id their request ids start with.
type doorTickets struct {
	ids []string
	rid string
}

func callbackCreate(requestID string) map[string]any {
	return map[string]any{"type": "tool_call",
		"function": map[string]any{"name": "create_ticket", "content": map[string]any{"title": "Printer on fire (callback)", "priority": "high"}},
		"context":  map[string]any{"externalUserId": "user-a", "metadata": map[string]any{"request_id": requestID}}}
}

// checkDoors creates one ticket through each door of s, waits for both
// deliveries and checks them against RT at base (auth signs the requests).
func checkDoors(t *testing.T, s *loadtest.Server, auth func(*http.Request), base string) doorTickets {
	t.Helper()
	n := validNonce(t)
	rid := "rt-doors-" + dynamotest.RandomHex(4)
	ids := []string{
		callDoor(t, s.URL+"/callback", n, callbackCreate(rid+"-cb")),
		callDoor(t, s.URL+"/mcp", n, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": map[string]any{
			"name": "create_ticket", "arguments": map[string]any{"title": "Printer on fire (MCP)", "priority": "high"},
			"_meta": map[string]any{"_aiv_nonce": n, "_aiv_external_user_id": "user-c", "_aiv_call_source": "McpClient", "request_id": rid + "-mcp"}}}),
	}
	store := dynamo.New(storeOf(t, s).Client, s.Table)
	for i, id := range ids {
		d := waitFinal(t, store, id)
		held := rtByKey(t, base, auth, d.Key)
		tenant := []string{"tenant-a", "tenant-b"}[i]
		if d.State != delivery.Delivered || len(held) != 1 || d.Receipt.ID != fmt.Sprint(held[0].ID) {
			t.Fatalf("door %d: delivery %+v; RT holds %+v for its key: want delivered, exactly one ticket", i, d, held)
		}
		if h := held[0]; h.ExternalID != id || h.Tenant != tenant {
			t.Fatalf("door %d: RT's ticket carries %+v", i, h)
		}
	}
	return doorTickets{ids: ids, rid: rid}
}

func callDoor(t *testing.T, u, n string, body map[string]any) string {
	t.Helper()
	a := callAnswer(t, u, n, body)
	id, _ := a["ticket_id"].(string)
	if a["status"] != "created" || id == "" {
		t.Fatalf("%s answered %v", u, a)
	}
	return id
}

// callAnswer sends body to a door of the server and returns its answer
// (an MCP result's structured content).
func callAnswer(t *testing.T, u, n string, body map[string]any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Nonce", n)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var a map[string]any
	_ = json.Unmarshal(out, &a)
	if res, ok := a["result"].(map[string]any); ok {
		a, _ = res["structuredContent"].(map[string]any)
	}
	if resp.StatusCode != http.StatusOK || a == nil {
		t.Fatalf("%s answered %d %s", u, resp.StatusCode, out)
	}
	return a
}

// waitFinal reads ticket id's delivery until it leaves the queue.
func waitFinal(t *testing.T, store *dynamo.Store, id string) delivery.Record {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := store.Delivery(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if d != nil && d.State.Final() {
			return *d
		}
		if time.Now().After(deadline) {
			t.Fatalf("ticket %s still %+v after a minute", id, d)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// rtByKey lists RT's tickets whose key field is key.
func rtByKey(t *testing.T, base string, auth func(*http.Request), key string) []helpdesk.Ticket {
	t.Helper()
	found, err := rtlocal.Search(context.Background(), base, auth, rt.Query(key))
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// TestStressDeliversToRT is a short RT pass of make stress: two server
// processes on one store under DynamoDB's conflict rule with lost
// answers, the mixed run and a burst, every ticket delivered to a real
// Request Tracker through the fault proxy misbehaving on a fifth of the
// creates. RT holds each ticket exactly once, nothing is lost, and no
// delivery ends uncertain: RT can always be looked up.
func TestStressDeliversToRT(t *testing.T) {
	rtlocal.Require(t)
	if dynamotest.External() {
		t.Skip("the stress run starts its own store")
	}
	sum := runStress(t, 5*time.Minute, loadtest.StressOptions{
		Server: serverBin, Servers: 2, Calls: 60, Ops: 24, Concurrency: 8, Seed: suitetest.Seed(t),
		Cost: 9, Nonces: 2, Hold: conflictHold, LoseRate: 0.05, Bursts: 2,
		Destination: "rt", FaultRate: 0.2, SettleTimeout: 2 * time.Minute,
	})
	d := sum.Deliveries
	if d == nil || d.Duplicated != 0 || d.Uncertain != 0 || d.States[string(delivery.Delivered)] != d.Tickets ||
		d.Tickets != sum.Calls.Operations+sum.Burst.Rounds {
		t.Fatalf("deliveries %+v for %d operations and %d bursts: want every one delivered, once", d, sum.Calls.Operations, sum.Burst.Rounds)
	}
	if d.Faults == 0 {
		t.Fatal("the proxy injected no fault")
	}
}
