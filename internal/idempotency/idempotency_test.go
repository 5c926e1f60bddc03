package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/canonjson"
)

func parse(t *testing.T, s string) map[string]any {
	t.Helper()
	v, err := canonjson.Parse([]byte(s), canonjson.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return v.(map[string]any)
}

func TestDeriveIsTheHashOfTheCanonicalTuple(t *testing.T) {
	k, err := Derive(PolicyArguments, Operation{Tenant: "tenant-a", RequestID: "request-example", Function: "create_ticket", Arguments: parse(t, `{"title":"Cannot sign in","a":[1,2.50]}`)})
	if err != nil {
		t.Fatal(err)
	}
	tuple := `[2,"tenant-a","request-example","create_ticket",{"a":[1,2.5],"title":"Cannot sign in"}]`
	sum := sha256.Sum256([]byte(tuple))
	if k.ID != hex.EncodeToString(sum[:]) {
		t.Fatalf("key %s is not SHA-256 of %s", k.ID, tuple)
	}
	fp := sha256.Sum256([]byte(`{"a":[1,2.5],"title":"Cannot sign in"}`))
	if k.Fingerprint != hex.EncodeToString(fp[:]) {
		t.Fatalf("fingerprint %s", k.Fingerprint)
	}
}

func TestDeriveSeparatesEveryComponent(t *testing.T) {
	args := parse(t, `{"title":"x"}`)
	base, _ := Derive(PolicyArguments, Operation{Tenant: "t", RequestID: "r", Function: "f", Arguments: args})
	for name, k := range map[string]Key{
		"tenant":   must(Derive(PolicyArguments, Operation{Tenant: "t2", RequestID: "r", Function: "f", Arguments: args})),
		"request":  must(Derive(PolicyArguments, Operation{Tenant: "t", RequestID: "r2", Function: "f", Arguments: args})),
		"function": must(Derive(PolicyArguments, Operation{Tenant: "t", RequestID: "r", Function: "f2", Arguments: args})),
		"argument": must(Derive(PolicyArguments, Operation{Tenant: "t", RequestID: "r", Function: "f", Arguments: parse(t, `{"title":"y"}`)})),
		// A component boundary cannot be moved by the values.
		"shifted": must(Derive(PolicyArguments, Operation{Tenant: "t\",\"r", RequestID: "", Function: "f", Arguments: args})),
		"policy":  must(Derive(PolicyRequest, Operation{Tenant: "t", RequestID: "r", Function: "f", Arguments: args})),
	} {
		if k.ID == base.ID {
			t.Errorf("changing the %s did not change the key", name)
		}
	}
	same := must(Derive(PolicyArguments, Operation{Tenant: "t", RequestID: "r", Function: "f", Arguments: parse(t, ` { "title" : "x" } `)}))
	if same.ID != base.ID {
		t.Error("whitespace changed the key")
	}
}

// TestKeyVersionIsInTheTuple: under either policy, the tuple starts with
// the derivation's version, and the version 1 tuple (none) gives another
// key.
func TestKeyVersionIsInTheTuple(t *testing.T) {
	if KeyVersion != 2 {
		t.Fatalf("KeyVersion = %d; a new version needs README's upgrade note and this test updated", KeyVersion)
	}
	for pol, tuples := range map[Policy][2]string{
		PolicyArguments: {`[2,"t","r","f",{"title":"x"}]`, `["t","r","f",{"title":"x"}]`},
		PolicyRequest:   {`[2,"t","r","f"]`, `["t","r","f"]`},
	} {
		k := must(Derive(pol, Operation{Tenant: "t", RequestID: "r", Function: "f", Arguments: map[string]any{"title": "x"}}))
		v2, v1 := sha256.Sum256([]byte(tuples[0])), sha256.Sum256([]byte(tuples[1]))
		if k.ID != hex.EncodeToString(v2[:]) || k.ID == hex.EncodeToString(v1[:]) {
			t.Errorf("%s: key %s is not SHA-256 of %s", pol, k.ID, tuples[0])
		}
	}
}

func TestRequestPolicyIgnoresArgumentsButKeepsTheFingerprint(t *testing.T) {
	a := must(Derive(PolicyRequest, Operation{Tenant: "t", RequestID: "r", Function: "f", Arguments: map[string]any{"title": "x"}}))
	b := must(Derive(PolicyRequest, Operation{Tenant: "t", RequestID: "r", Function: "f", Arguments: map[string]any{"title": "y"}}))
	if a.ID != b.ID || a.Fingerprint == b.Fingerprint {
		t.Fatalf("request policy: %+v %+v", a, b)
	}
}

func must(k Key, err error) Key {
	if err != nil {
		panic(err)
	}
	return k
}

func TestParsePolicies(t *testing.T) {
	known := []string{"create_ticket", "get_ticket"}
	p, err := ParsePolicies(" create_ticket = request ", known)
	if err != nil || p.For("create_ticket") != PolicyRequest || p.For("get_ticket") != PolicyArguments {
		t.Fatalf("ParsePolicies = %v, %v", p, err)
	}
	if p, err := ParsePolicies("", known); err != nil || len(p) != 0 {
		t.Fatalf("empty: %v %v", p, err)
	}
	for in, says := range map[string]string{
		"create_ticket=once": `policy must be "arguments" or "request"`,
		"drop_db=request":    `unknown function "drop_db"`,
		"create_ticket":      "want function=policy",
	} {
		if _, err := ParsePolicies(in, known); err == nil || !strings.Contains(err.Error(), says) {
			t.Errorf("ParsePolicies(%q) = %v, want %q", in, err, says)
		}
	}
}

func TestReplay(t *testing.T) {
	rec := &Record{UserID: "u1", State: Completed, Fingerprint: "fp"}
	cases := []struct {
		rec        Record
		user, fp   string
		want       Verdict
		wantString string
	}{
		{*rec, "u1", "fp", Duplicate, "duplicate"},
		{*rec, "u2", "fp", Conflict, "conflict"},
		{Record{UserID: "u2", State: Pending}, "u1", "fp", Conflict, "conflict beats pending"},
		{Record{UserID: "u1", State: Pending, Fingerprint: "fp"}, "u1", "fp", InProgress, "pending"},
		{Record{UserID: "u1", State: Pending, Fingerprint: "other"}, "u1", "fp", InProgress, "pending with other arguments"},
		{*rec, "u1", "other", Reused, "reused"},
	}
	for _, c := range cases {
		if got := Replay(&c.rec, c.user, c.fp); got != c.want {
			t.Errorf("%s: Replay = %v, want %v", c.wantString, got, c.want)
		}
	}
}

func TestLive(t *testing.T) {
	at := time.Unix(1000, 0)
	r := Record{ExpiresAt: at}
	if !r.Live(at) || !r.Live(at.Add(-time.Second)) || r.Live(at.Add(time.Second)) {
		t.Fatal("window boundary wrong")
	}
	if !(&Record{}).Live(at.Add(100 * 365 * 24 * time.Hour)) {
		t.Fatal("a record without expiry expired")
	}
}

// TestParsePoliciesLeavesKnownAlone: naming the known functions in an error
// sorts a copy, never the caller's slice.
func TestParsePoliciesLeavesKnownAlone(t *testing.T) {
	known := []string{"get_ticket", "create_ticket"}
	_, err := ParsePolicies("drop_db=request", known)
	if err == nil || !strings.Contains(err.Error(), "(known: create_ticket, get_ticket)") {
		t.Fatalf("ParsePolicies = %v", err)
	}
	if known[0] != "get_ticket" || known[1] != "create_ticket" {
		t.Fatalf("the caller's slice was reordered: %q", known)
	}
}
