package perf

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
)

// doorsTable is the doors run's table.
const doorsTable = "oncecall-doors"

// DoorsResult is the latency of created calls through each door, and the
// store requests they made, by operation.
type DoorsResult struct {
	Callback, MCP           Durations
	CallbackStore, MCPStore map[string]int64
}

// Transactions are the store transactions per created call through each
// door.
func (r DoorsResult) Transactions() (callback, mcp float64) {
	return float64(r.CallbackStore["TransactWriteItems"]) / float64(len(r.Callback)), float64(r.MCPStore["TransactWriteItems"]) / float64(len(r.MCP))
}

// Ratio is the MCP door's created p50 over the callback's.
func (r DoorsResult) Ratio() float64 { return float64(r.MCP.P50()) / float64(r.Callback.P50()) }

// Doors sends n created calls through POST /callback and n through POST
// /mcp (tools/call, the nonce and the user in params._meta as AIVAX puts
// them), alternately, one client, to one local service over one store,
// with nonces at AIVAX's cost, after ten of each to warm up.
func Doors(ctx context.Context, st *Store, n int) (DoorsResult, error) {
	r := DoorsResult{CallbackStore: map[string]int64{}, MCPStore: map[string]int64{}}
	svc, err := startService(ctx, serviceConfig(st.URL, doorsTable), nil)
	if err != nil {
		return r, err
	}
	defer func() { _ = svc.Close() }()
	hash, err := nonce.Generate(localdb.DemoHookKey, AIVAXCost)
	if err != nil {
		return r, err
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer client.CloseIdleConnections()
	mcpURL := strings.TrimSuffix(svc.URL, httpapi.CallbackPath) + httpapi.MCPPath
	post := func(url string, body []byte, header map[string]string) (time.Duration, map[string]any, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return 0, nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		start := time.Now()
		res, err := client.Do(req)
		if err != nil {
			return 0, nil, err
		}
		raw, err := io.ReadAll(res.Body)
		_ = res.Body.Close()
		d := time.Since(start)
		var out map[string]any
		if err == nil {
			err = json.Unmarshal(raw, &out)
		}
		if err == nil && res.StatusCode != http.StatusOK {
			err = fmt.Errorf("%s answered %d %s", url, res.StatusCode, raw)
		}
		return d, out, err
	}
	created := func(answer map[string]any) bool {
		if res, ok := answer["result"].(map[string]any); ok {
			answer, _ = res["structuredContent"].(map[string]any)
		}
		return answer["status"] == "created" && answer["deduplicated"] == false
	}
	for i := range n + 10 {
		rid := fmt.Sprintf("doors-%d-%d", time.Now().UnixNano(), i)
		before := st.Front.Counts()
		d1, a1, err := post(svc.URL, CreateBody("user-a", rid+"-cb"), map[string]string{"X-Request-Nonce": hash})
		cb := st.Front.Counts().Since(before, doorsTable)
		if err == nil && !created(a1) {
			err = fmt.Errorf("callback answered %v", a1)
		}
		if err != nil {
			return r, err
		}
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": map[string]any{
			"name":      "create_ticket",
			"arguments": map[string]any{"title": "Cannot sign in", "description": "Since this morning the login page says my password is wrong.\nI reset it twice.", "priority": "high", "tags": []string{"login", "web"}},
			"_meta":     map[string]any{"_aiv_nonce": hash, "_aiv_external_user_id": "user-a", "_aiv_call_source": "McpClient", "request_id": rid + "-mcp"},
		}})
		before = st.Front.Counts()
		d2, a2, err := post(mcpURL, body, map[string]string{"MCP-Protocol-Version": "2025-11-25", "Accept": "application/json, text/event-stream"})
		door := st.Front.Counts().Since(before, doorsTable)
		if err == nil && !created(a2) {
			err = fmt.Errorf("mcp answered %v", a2)
		}
		if err != nil {
			return r, err
		}
		if i >= 10 {
			r.Callback, r.MCP = append(r.Callback, d1), append(r.MCP, d2)
			for op, n := range cb {
				r.CallbackStore[op] += n
			}
			for op, n := range door {
				r.MCPStore[op] += n
			}
		}
		if i%25 == 24 {
			if err := st.Prune(ctx, doorsTable); err != nil {
				return r, err
			}
		}
	}
	return r, nil
}

func doorsPart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## The two doors: a created call through /callback and through /mcp\n\n")
	st, err := StartStore()
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	r, err := Doors(ctx, st, o.DoorSamples)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d created `create_ticket` calls through each door, alternating, from one client to one local server (`httpapi`, as `make run` serves both doors) over one store, each with a fresh cost-%d nonce check: the AIVAX callback body with `X-Request-Nonce`, and an MCP `tools/call` with the nonce, the user and `request_id` in `params._meta` as AIVAX puts them. Both run the same pipeline and the same transaction; what differs is the envelope and its answer.\n\n", len(r.Callback), AIVAXCost)
	w.WriteString("| Door | p50 | p99 | Store requests per created call |\n|---|---:|---:|---|\n")
	fmt.Fprintf(w, "| POST /callback | %s | %s | %s |\n", ms(r.Callback.P50()), ms(r.Callback.P99()), Describe(r.CallbackStore, len(r.Callback)))
	fmt.Fprintf(w, "| POST /mcp | %s | %s | %s |\n\n", ms(r.MCP.P50()), ms(r.MCP.P99()), Describe(r.MCPStore, len(r.MCP)))
	w.WriteString("The MCP door is the official MCP Go SDK's stateless handler (a session per request) with this door's checks around it; the store requests are counted by the store's front, for each call alone.\n\n")
	target(w, "p50 of a created call through /mcp ÷ through /callback", ftoa(r.Ratio(), 3), "≤ 1.05", r.Ratio() <= 1.05)
	cbTx, mcpTx := r.Transactions()
	target(w, "store transactions per created call, /callback and /mcp", ftoa(cbTx, 2)+" and "+ftoa(mcpTx, 2), "1 each", cbTx == 1 && mcpTx == 1)
	return nil
}
