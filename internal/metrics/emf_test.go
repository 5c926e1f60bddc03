package metrics_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/metrics"
	"github.com/oncecall/oncecall/internal/protocol"
)

// writes records each Write call separately.
type writes struct {
	mu    sync.Mutex
	lines [][]byte
}

func (w *writes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lines = append(w.lines, bytes.Clone(p))
	return len(p), nil
}

type emfLine struct {
	AWS struct {
		Timestamp         int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	} `json:"_aws"`
}

// check validates one line against the EMF specification's rules that
// CloudWatch enforces, and returns its members.
func check(t *testing.T, raw []byte) (emfLine, map[string]any) {
	t.Helper()
	if !bytes.HasSuffix(raw, []byte("\n")) || bytes.Count(raw, []byte("\n")) != 1 {
		t.Fatalf("not exactly one newline-terminated line: %q", raw)
	}
	var l emfLine
	if err := json.Unmarshal(raw, &l); err != nil {
		t.Fatalf("not JSON: %v: %s", err, raw)
	}
	var members map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&members); err != nil {
		t.Fatal(err)
	}
	if l.AWS.Timestamp <= 0 || len(l.AWS.CloudWatchMetrics) != 1 {
		t.Fatalf("bad _aws metadata: %s", raw)
	}
	d := l.AWS.CloudWatchMetrics[0]
	if len(d.Metrics) == 0 || len(d.Metrics) > 100 {
		t.Fatalf("%d metrics in a directive; EMF allows 1 to 100", len(d.Metrics))
	}
	seen := map[string]bool{}
	for _, m := range d.Metrics {
		if seen[m.Name] {
			t.Fatalf("metric %q declared twice", m.Name)
		}
		seen[m.Name] = true
		if _, ok := members[m.Name].(json.Number); !ok {
			t.Fatalf("metric %q has no numeric member: %v", m.Name, members[m.Name])
		}
	}
	for _, set := range d.Dimensions {
		for _, dim := range set {
			if s, ok := members[dim].(string); !ok || s == "" {
				t.Fatalf("dimension %q has no string member", dim)
			}
		}
	}
	return l, members
}

func num(t *testing.T, m map[string]any, key string) float64 {
	t.Helper()
	n, ok := m[key].(json.Number)
	if !ok {
		t.Fatalf("%s is %v, not a number", key, m[key])
	}
	f, err := n.Float64()
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestObserveWritesOneEMFLinePerCall(t *testing.T) {
	w := &writes{}
	e := metrics.New(w, "oncecall-test", "oncecall-CallbackFunction-abc", callback.Outcomes,
		metrics.WithClock(func() time.Time { return time.UnixMilli(1764500000123) }))

	for _, outcome := range callback.Outcomes {
		e.Observe("create_ticket", outcome, 200, 12345*time.Microsecond)
	}
	if len(w.lines) != len(callback.Outcomes) {
		t.Fatalf("%d writes for %d calls", len(w.lines), len(callback.Outcomes))
	}
	for i, raw := range w.lines {
		outcome := callback.Outcomes[i]
		l, m := check(t, raw)
		if l.AWS.Timestamp != 1764500000123 {
			t.Errorf("Timestamp = %d", l.AWS.Timestamp)
		}
		d := l.AWS.CloudWatchMetrics[0]
		if d.Namespace != "oncecall-test" {
			t.Errorf("Namespace = %q", d.Namespace)
		}
		if len(d.Dimensions) != 1 || len(d.Dimensions[0]) != 1 || d.Dimensions[0][0] != metrics.Dimension {
			t.Errorf("Dimensions = %v, want [[%s]]", d.Dimensions, metrics.Dimension)
		}
		if m[metrics.Dimension] != "oncecall-CallbackFunction-abc" {
			t.Errorf("%s = %v", metrics.Dimension, m[metrics.Dimension])
		}
		units := map[string]string{}
		for _, def := range d.Metrics {
			units[def.Name] = def.Unit
		}
		if len(units) != len(callback.Outcomes)+2 {
			t.Errorf("%d metrics, want every outcome + calls + latency", len(units))
		}
		sum := 0.0
		for _, o := range callback.Outcomes {
			if units[o] != "Count" {
				t.Errorf("outcome %s unit %q, want Count", o, units[o])
			}
			v := num(t, m, o)
			want := 0.0
			if o == outcome {
				want = 1
			}
			if v != want {
				t.Errorf("call with outcome %s: %s = %v, want %v", outcome, o, v, want)
			}
			sum += v
		}
		if sum != 1 {
			t.Errorf("outcome counts sum to %v, want 1", sum)
		}
		if units[metrics.Calls] != "Count" || num(t, m, metrics.Calls) != 1 {
			t.Errorf("calls = %v (%s)", m[metrics.Calls], units[metrics.Calls])
		}
		if units[metrics.Latency] != "Milliseconds" || num(t, m, metrics.Latency) != 12.345 {
			t.Errorf("latency = %v (%s), want 12.345 Milliseconds", m[metrics.Latency], units[metrics.Latency])
		}
		if m["outcome"] != outcome || m["function"] != "create_ticket" || num(t, m, "status") != 200 {
			t.Errorf("properties outcome=%v function=%v status=%v", m["outcome"], m["function"], m["status"])
		}
	}
}

func TestObserveUnknownOutcomeCountsOnlyTheCall(t *testing.T) {
	w := &writes{}
	metrics.New(w, "ns", "", callback.Outcomes).Observe("", "surprise", 500, time.Millisecond)
	_, m := check(t, w.lines[0])
	for _, o := range callback.Outcomes {
		if num(t, m, o) != 0 {
			t.Errorf("%s = %v for an unknown outcome", o, m[o])
		}
	}
	if num(t, m, metrics.Calls) != 1 || m["outcome"] != "surprise" {
		t.Errorf("calls=%v outcome=%v", m[metrics.Calls], m["outcome"])
	}
	if _, ok := m["function"]; ok {
		t.Error("an empty function name is written")
	}
	if m[metrics.Dimension] != "oncecall" {
		t.Errorf("default dimension value = %v, want oncecall", m[metrics.Dimension])
	}
}

func TestObserveEscapesTheFunctionName(t *testing.T) {
	// The function name comes from the request: it must stay one JSON
	// string on one line whatever it holds.
	w := &writes{}
	name := "x\"}\n{\"_aws\":1,\u2028"
	metrics.New(w, "ns", "svc", callback.Outcomes).Observe(name, protocol.StatusRejected, 200, 0)
	_, m := check(t, w.lines[0])
	if m["function"] != name {
		t.Errorf("function = %q, want %q", m["function"], name)
	}
}

func TestObserveIsSafeConcurrently(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	w := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	})
	e := metrics.New(w, "ns", "svc", callback.Outcomes)
	const goroutines, each = 8, 50
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				e.Observe("get_ticket", protocol.StatusFound, 200, time.Millisecond)
			}
		}()
	}
	wg.Wait()
	lines := strings.SplitAfter(buf.String(), "\n")
	lines = lines[:len(lines)-1] // after the last newline
	if len(lines) != goroutines*each {
		t.Fatalf("%d lines, want %d", len(lines), goroutines*each)
	}
	for _, l := range lines {
		check(t, []byte(l))
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
