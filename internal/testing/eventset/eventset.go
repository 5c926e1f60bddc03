package eventset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
)

// Files in the events folder that are not events.
const (
	// ManifestFile lists the events and what each must produce.
	ManifestFile = "expected.json"
	// SAMEnvFile is the --env-vars file for `sam local invoke`.
	SAMEnvFile = "sam-env.json"
)

// PlaceholderTicketID is the ticket id an event file holds where the
// created ticket's id goes.
const PlaceholderTicketID = "00000000-0000-4000-8000-000000000000"

// Nonce kinds an event can carry, relative to the local hook key.
const (
	NonceValid    = "valid"
	NonceWrongKey = "wrong_key"
	NonceOverCost = "over_cost"
	NonceMissing  = "missing"
)

// Case is one event and what it must produce.
type Case struct {
	// Event is the file name, relative to the manifest's folder.
	Event string `json:"event"`
	// Row is the response-table row it exercises.
	Row string `json:"row"`
	// Nonce is one of the Nonce* kinds.
	Nonce string `json:"nonce"`
	// After names events whose effects this one needs.
	After []string `json:"after,omitempty"`
	// TicketFrom names the event whose created ticket_id replaces the
	// placeholder in this event's function.content.ticket_id.
	TicketFrom string `json:"ticket_from,omitempty"`
	// SameTicketAs names the event whose ticket_id this one must return.
	SameTicketAs string `json:"same_ticket_as,omitempty"`
	// Status is the HTTP status of the answer.
	Status int `json:"status"`
	// Outcome is the handler's outcome (one of callback.Outcomes).
	Outcome string `json:"outcome"`
	// Body is a subset the answer's body must contain.
	Body map[string]any `json:"body"`
}

// Needs lists the events c depends on.
func (c Case) Needs() []string {
	var out []string
	out = append(out, c.After...)
	for _, n := range []string{c.TicketFrom, c.SameTicketAs} {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Manifest is the events of one folder, in the order they run.
type Manifest struct {
	Dir   string
	Cases []Case
}

// Load reads dir's manifest and checks it: every event file exists, every
// JSON file of dir is an event of the manifest, names are unique, and every
// dependency runs earlier.
func Load(dir string) (*Manifest, error) {
	raw, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	var doc struct {
		About  string `json:"about"`
		Events []Case `json:"events"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	m := &Manifest{Dir: dir, Cases: doc.Events}
	seen := map[string]bool{}
	for _, c := range m.Cases {
		if seen[c.Event] {
			return nil, fmt.Errorf("%s: %s listed twice", ManifestFile, c.Event)
		}
		if _, err := os.Stat(filepath.Join(dir, c.Event)); err != nil {
			return nil, fmt.Errorf("%s: %w", ManifestFile, err)
		}
		switch c.Nonce {
		case NonceValid, NonceWrongKey, NonceOverCost, NonceMissing:
		default:
			return nil, fmt.Errorf("%s: %s: nonce %q is not one of valid, wrong_key, over_cost, missing", ManifestFile, c.Event, c.Nonce)
		}
		if c.Status == 0 || c.Outcome == "" || len(c.Body) == 0 {
			return nil, fmt.Errorf("%s: %s needs status, outcome and body", ManifestFile, c.Event)
		}
		for _, n := range c.Needs() {
			if !seen[n] {
				return nil, fmt.Errorf("%s: %s needs %s, which is not listed before it", ManifestFile, c.Event, n)
			}
		}
		seen[c.Event] = true
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		name := filepath.Base(f)
		if name != ManifestFile && name != SAMEnvFile && !seen[name] {
			return nil, fmt.Errorf("%s has no entry in %s", name, ManifestFile)
		}
	}
	return m, nil
}

// Case returns the case for event file name (a path or a base name).
func (m *Manifest) Case(name string) (Case, bool) {
	name = filepath.Base(name)
	for _, c := range m.Cases {
		if c.Event == name {
			return c, true
		}
	}
	return Case{}, false
}

// Plan returns the named events preceded by everything they depend on, in
// manifest order: what to run, against a fresh store, to play them.
func (m *Manifest) Plan(names ...string) ([]Case, error) {
	want := map[string]bool{}
	var add func(string) error
	add = func(name string) error {
		c, ok := m.Case(name)
		if !ok {
			return fmt.Errorf("%s is not an event of %s", name, filepath.Join(m.Dir, ManifestFile))
		}
		if want[c.Event] {
			return nil
		}
		want[c.Event] = true
		for _, n := range c.Needs() {
			if err := add(n); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range names {
		if err := add(n); err != nil {
			return nil, err
		}
	}
	var out []Case
	for _, c := range m.Cases {
		if want[c.Event] {
			out = append(out, c)
		}
	}
	return out, nil
}

// Player plays cases in order, carrying created ticket ids forward.
type Player struct {
	// HookKey, when set, replaces the nonce of every event whose nonce is
	// NonceValid (made from the local demo key) with a fresh one of
	// HookKey at nonce.MinCost, for a function configured with a key of
	// its own, as a deployment must be.
	HookKey string

	m       *Manifest
	tickets map[string]string
}

// Player returns a Player with no history.
func (m *Manifest) Player() *Player {
	return &Player{m: m, tickets: map[string]string{}}
}

// Event returns c's event, with the ticket id of c.TicketFrom in place of
// the placeholder.
func (p *Player) Event(c Case) ([]byte, error) {
	raw, err := os.ReadFile(filepath.Join(p.m.Dir, c.Event))
	if err != nil {
		return nil, err
	}
	resign := p.HookKey != "" && c.Nonce == NonceValid
	if c.TicketFrom == "" && !resign {
		return raw, nil
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("%s: %w", c.Event, err)
	}
	if c.TicketFrom != "" {
		id, ok := p.tickets[c.TicketFrom]
		if !ok {
			return nil, fmt.Errorf("%s needs the ticket created by %s, which has not run", c.Event, c.TicketFrom)
		}
		if !strings.Contains(ev.Body, `"ticket_id":"`+PlaceholderTicketID+`"`) {
			return nil, fmt.Errorf("%s: the body has no ticket_id %s to replace", c.Event, PlaceholderTicketID)
		}
		ev.Body = strings.Replace(ev.Body, PlaceholderTicketID, id, 1)
	}
	if resign {
		h, err := nonce.Generate(p.HookKey, nonce.MinCost)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Event, err)
		}
		replaced := false
		for k := range ev.Headers {
			if strings.EqualFold(k, protocol.NonceHeader) {
				ev.Headers[k], replaced = h, true
			}
		}
		if !replaced {
			// The MCP door carries it in params._meta._aiv_nonce.
			if old, ok := Nonce(ev); ok && old != "" && strings.Count(ev.Body, old) == 1 {
				ev.Body, replaced = strings.Replace(ev.Body, old, h, 1), true
			}
		}
		if !replaced {
			return nil, fmt.Errorf("%s: a %s event without %s or _meta._aiv_nonce", c.Event, NonceValid, protocol.NonceHeader)
		}
	}
	return json.Marshal(ev)
}

// Result is what one event produced.
type Result struct {
	Response events.APIGatewayV2HTTPResponse
	// Output is the function's output lines during the call.
	Output []string
}

// Check compares r with c and remembers a created ticket id. The error
// lists every difference.
func (p *Player) Check(c Case, r Result) error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if r.Response.StatusCode != c.Status {
		bad("status %d, want %d", r.Response.StatusCode, c.Status)
	}
	if ct := r.Response.Headers["content-type"]; ct != "application/json" {
		bad("content-type %q, want application/json", ct)
	}
	outcome, err := Outcome(r.Output)
	if err != nil {
		bad("%v", err)
	} else if outcome != c.Outcome {
		bad("outcome %q, want %q", outcome, c.Outcome)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(r.Response.Body), &body); err != nil {
		bad("body is not a JSON object: %v", err)
	} else {
		if err := subset("body", c.Body, body); err != nil {
			bad("%v", err)
		}
		// An MCP tool result carries the callback's answer as its
		// structuredContent.
		answer := body
		if res, ok := body["result"].(map[string]any); ok {
			if sc, ok := res["structuredContent"].(map[string]any); ok {
				answer = sc
			}
		}
		id, _ := answer["ticket_id"].(string)
		if c.SameTicketAs != "" && (id == "" || id != p.tickets[c.SameTicketAs]) {
			bad("ticket_id %q, want %s's %q", id, c.SameTicketAs, p.tickets[c.SameTicketAs])
		}
		if t, ok := answer["ticket"].(map[string]any); ok && c.TicketFrom != "" && t["ticket_id"] != p.tickets[c.TicketFrom] {
			bad("ticket.ticket_id %v, want %s's %q", t["ticket_id"], c.TicketFrom, p.tickets[c.TicketFrom])
		}
		if c.Outcome == "created" {
			if id == "" {
				bad("a created answer without ticket_id")
			}
			p.tickets[c.Event] = id
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w\nresponse: %d %s", c.Event, errors.Join(errs...), r.Response.StatusCode, r.Response.Body)
	}
	return nil
}

// Nonce returns the nonce an event carries: its X-Request-Nonce header or,
// on the MCP door, its params._meta._aiv_nonce.
func Nonce(ev events.APIGatewayV2HTTPRequest) (string, bool) {
	if h, ok := ev.Headers["x-request-nonce"]; ok {
		return h, true
	}
	var rpc struct {
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal([]byte(ev.Body), &rpc) != nil {
		return "", false
	}
	n, ok := rpc.Params.Meta["_aiv_nonce"].(string)
	return n, ok
}

// Ticket returns the ticket id event created, if it ran.
func (p *Player) Ticket(event string) (string, bool) {
	id, ok := p.tickets[event]
	return id, ok
}

// subset reports how got fails to contain want: objects member by member,
// arrays element by element, other values equal.
func subset(path string, want, got any) error {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s is %v, want an object", path, got)
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s.%s is missing", path, k)
			}
			if err := subset(path+"."+k, wv, gv); err != nil {
				return err
			}
		}
		return nil
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s is %v, want %d elements", path, got, len(w))
		}
		for i := range w {
			if err := subset(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); err != nil {
				return err
			}
		}
		return nil
	default:
		if !reflect.DeepEqual(want, got) {
			return fmt.Errorf("%s is %v, want %v", path, got, want)
		}
		return nil
	}
}

// Outcome reads a call's outcome from its output lines: the handler's log
// line and, when metrics are on, its EMF line. Both must agree, and there
// must be exactly one log line with an outcome.
func Outcome(lines []string) (string, error) {
	var logged, measured []string
	for _, l := range lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) != nil {
			continue
		}
		o, ok := m["outcome"].(string)
		if !ok {
			continue
		}
		if _, emf := m["_aws"]; emf {
			measured = append(measured, o)
		} else {
			logged = append(logged, o)
		}
	}
	if len(logged) != 1 {
		return "", fmt.Errorf("%d log lines with an outcome, want 1: %q", len(logged), lines)
	}
	if len(measured) > 1 || len(measured) == 1 && measured[0] != logged[0] {
		return "", fmt.Errorf("metric lines say %q, the log line %q", measured, logged[0])
	}
	return logged[0], nil
}

// Metered reports whether lines hold an EMF line.
func Metered(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, "{") && strings.Contains(l, `"_aws":`) {
			return true
		}
	}
	return false
}
