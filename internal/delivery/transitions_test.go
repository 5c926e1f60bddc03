package delivery_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/delivery"
)

// TestStateMachineDrawn holds the state diagram of docs/delivery.md to
// delivery.Transitions: the same states, and the same moves by the same
// actors, none missing and none extra.
func TestStateMachineDrawn(t *testing.T) {
	raw, err := os.ReadFile("../../docs/delivery.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	start := strings.Index(doc, "```mermaid\nstateDiagram-v2\n")
	if start < 0 {
		t.Fatal("docs/delivery.md draws no stateDiagram-v2")
	}
	block := doc[start:]
	block = block[:strings.Index(block[3:], "```")+3]
	edge := regexp.MustCompile(`^\s*(\[\*\]|[a-z_]+) --> ([a-z_]+): ([a-z]+),`)
	type move struct{ from, to, by string }
	var drawn []move
	states := map[string]bool{}
	for _, line := range strings.Split(block, "\n")[2:] {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "```") {
			continue
		}
		m := edge.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("a line of the diagram is not `from --> to: actor, words`: %q", line)
			continue
		}
		from := m[1]
		if from == "[*]" {
			from = ""
		} else {
			states[from] = true
		}
		states[m[2]] = true
		drawn = append(drawn, move{from, m[2], m[3]})
	}
	var code []move
	for _, tr := range delivery.Transitions {
		code = append(code, move{string(tr.From), string(tr.To), string(tr.By)})
	}
	for _, m := range code {
		if !slices.Contains(drawn, m) {
			t.Errorf("the diagram lacks %q --> %q by %s", m.from, m.to, m.by)
		}
	}
	for _, m := range drawn {
		if !slices.Contains(code, m) {
			t.Errorf("the diagram draws %q --> %q by %s, which delivery.Transitions does not list", m.from, m.to, m.by)
		}
	}
	for _, s := range delivery.States {
		if !states[string(s)] {
			t.Errorf("the diagram does not draw the state %s", s)
		}
		delete(states, string(s))
	}
	for s := range states {
		t.Errorf("the diagram draws %s, which is not a stored state", s)
	}
}

// TestAllowed: the moves the list gives are allowed to their actor only.
func TestAllowed(t *testing.T) {
	cases := []struct {
		from, to delivery.State
		by       delivery.Mover
		want     bool
	}{
		{delivery.Queued, delivery.Delivered, delivery.ByWorker, true},
		{delivery.Uncertain, delivery.Delivered, delivery.ByWorker, false},
		{delivery.Uncertain, delivery.Delivered, delivery.ByOperator, true},
		{delivery.Delivered, delivery.Queued, delivery.ByOperator, false},
		{delivery.Abandoned, delivery.Abandoned, delivery.ByOperator, false},
		{"", delivery.Queued, delivery.ByCallback, true},
	}
	for _, c := range cases {
		if got := delivery.Allowed(c.from, c.to, c.by); got != c.want {
			t.Errorf("Allowed(%q, %q, %s) = %v, want %v", c.from, c.to, c.by, got, c.want)
		}
	}
}
