package secret

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/oncecall/oncecall/internal/nonce"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Keys{
		"plain-key":                                   {Current: "plain-key"},
		"  plain-key\n":                               {Current: "plain-key"},
		`{"current":"new"}`:                           {Current: "new"},
		`{"current":"new","previous":"old"}`:          {Current: "new", Previous: "old"},
		" {\"previous\":\"old\",\"current\":\"new\"}": {Current: "new", Previous: "old"},
		`{"current":"new","previous":"old","previous_until":"2026-12-01T12:00:00Z"}`: {Current: "new", Previous: "old",
			PreviousUntil: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)},
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "   ", `{"previous":"old"}`, `{"current":"a","extra":1}`, `{"current":`,
		`{"current":"new","previous_until":"2026-12-01T12:00:00Z"}`, `{"current":"new","previous":"old","previous_until":"tomorrow"}`} {
		if k, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted: %+v", in, k)
		}
	}
}

func TestParseErrorsDoNotEchoTheSecret(t *testing.T) {
	_, err := Parse(`{"current":"s3cr3t-value","bogus":true}`)
	if err == nil {
		t.Fatal("accepted")
	}
	if s := err.Error(); len(s) == 0 || strings.Contains(s, "s3cr3t") {
		t.Fatalf("error %q echoes the secret", s)
	}
}

// versionGetter is Secrets Manager answering one value, written at created.
type versionGetter struct {
	value   string
	created *time.Time
}

func (g versionGetter) GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	return &secretsmanager.GetSecretValueOutput{SecretString: &g.value, CreatedDate: g.created}, nil
}

// TestPreviousKeyWithoutAnEndEnds: a previous key written without
// previous_until is refused PreviousLife after the value was written, not
// accepted until someone removes it; with no creation date to count from,
// the value is refused.
func TestPreviousKeyWithoutAnEndEnds(t *testing.T) {
	written := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	value := `{"current":"` + keyB + `","previous":"` + keyA + `"}`
	k, err := HookKeys(context.Background(), versionGetter{value: value, created: &written}, "arn")
	if err != nil {
		t.Fatal(err)
	}
	now := written
	r, err := NewRotating(k, func(context.Context) (Keys, error) { return k, nil }, nonce.DefaultMaxCost, func() time.Time { return now }, nil)
	if err != nil {
		t.Fatal(err)
	}
	accepts(t, r, keyA, true, "when written")
	now = written.Add(PreviousLife - time.Second)
	accepts(t, r, keyA, true, "just before PreviousLife")
	now = written.Add(PreviousLife)
	accepts(t, r, keyA, false, "PreviousLife after it was written")
	accepts(t, r, keyB, true, "the current key then")

	// An explicit end is kept as written, even a later one.
	later := written.Add(3 * PreviousLife)
	k, err = HookKeys(context.Background(), versionGetter{value: `{"current":"` + keyB + `","previous":"` + keyA + `","previous_until":"` + later.Format(time.RFC3339) + `"}`, created: &written}, "arn")
	if err != nil || !k.PreviousUntil.Equal(later) {
		t.Errorf("an explicit previous_until: %v, %v; want %v", k.PreviousUntil, err, later)
	}
	if _, err := HookKeys(context.Background(), versionGetter{value: value}, "arn"); err == nil || !strings.Contains(err.Error(), "previous_until") {
		t.Errorf("no creation date: %v, want refused naming previous_until", err)
	}
	if strings.Contains(fmt.Sprint(err), keyA) {
		t.Error("the error quotes a key")
	}
}
