package nonce

import (
	"errors"
	"strings"
	"testing"
)

const testKey = "local-demo-hook-key-0123456789"

func mustHash(t testing.TB, key string, cost int) string {
	t.Helper()
	h, err := Generate(key, cost)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func withPrefix(h, variant string) string { return "$" + variant + h[3:] }

func TestVerify(t *testing.T) {
	v, err := NewVerifier(0, testKey)
	if err != nil {
		t.Fatal(err)
	}
	good := mustHash(t, testKey, MinCost)
	wrong := mustHash(t, "another-key", MinCost)
	over := mustHash(t, testKey, DefaultMaxCost+1)
	cases := []struct {
		name, header string
		want         error
	}{
		{"$2a$", withPrefix(good, "2a"), nil},
		{"$2b$", withPrefix(good, "2b"), nil},
		{"$2y$", withPrefix(good, "2y"), nil},
		{"missing", "", ErrMissing},
		{"wrong key", wrong, ErrMismatch},
		{"over cost", over, ErrCost},
		{"cost 31", "$2b$31$" + strings.Repeat("a", 53), ErrCost},
		{"cost 03", "$2b$03$" + strings.Repeat("a", 53), ErrCost},
		{"truncated", good[:59], ErrMalformed},
		{"extended", good + "x", ErrMalformed},
		{"plain text", strings.Repeat("x", 60), ErrMalformed},
		{"$2x$", withPrefix(good, "2x"), ErrMalformed},
		{"$1$", "$1$" + good[3:], ErrMalformed},
		{"non-digit cost", "$2b$1a$" + strings.Repeat("a", 53), ErrMalformed},
		{"bad alphabet", good[:59] + "!", ErrMalformed},
		{"hook key itself", testKey, ErrMalformed},
		{"one megabyte", strings.Repeat("$", 1<<20), ErrMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := v.Verify(c.header); !errors.Is(err, c.want) {
				t.Fatalf("Verify = %v, want %v", err, c.want)
			}
		})
	}
}

func TestErrorsNeverCarryTheNonce(t *testing.T) {
	v, _ := NewVerifier(0, testKey)
	h := mustHash(t, "wrong", MinCost)
	for _, hdr := range []string{h, h[:40], "$2b$31$" + strings.Repeat("a", 53)} {
		if err := v.Verify(hdr); err == nil || strings.Contains(err.Error(), hdr[7:]) || strings.Contains(err.Error(), testKey) {
			t.Fatalf("error %v leaks the nonce or the key", err)
		}
	}
}

func TestRotationAcceptsPreviousKey(t *testing.T) {
	v, err := NewVerifier(0, "new-key", "old-key")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"new-key", "old-key"} {
		if err := v.Verify(mustHash(t, k, MinCost)); err != nil {
			t.Errorf("key %s: %v", k, err)
		}
	}
	if err := v.Verify(mustHash(t, "older-key", MinCost)); !errors.Is(err, ErrMismatch) {
		t.Errorf("retired key: %v", err)
	}
	// Without the previous key, its nonces stop working.
	v2, _ := NewVerifier(0, "new-key", "")
	if err := v2.Verify(mustHash(t, "old-key", MinCost)); !errors.Is(err, ErrMismatch) {
		t.Errorf("rotation finished, old key still accepted: %v", err)
	}
}

func TestNewVerifierRefuses(t *testing.T) {
	if _, err := NewVerifier(0); err == nil {
		t.Error("no key accepted")
	}
	if _, err := NewVerifier(0, ""); err == nil {
		t.Error("empty key accepted")
	}
	if _, err := NewVerifier(0, strings.Repeat("k", MaxKeyBytes+1)); err == nil {
		t.Error("73-byte key accepted")
	}
	if _, err := NewVerifier(HardMaxCost+1, testKey); err == nil {
		t.Error("max cost above the hard cap accepted")
	}
	if _, err := NewVerifier(3, testKey); err == nil {
		t.Error("max cost below MinCost accepted")
	}
	v, err := NewVerifier(12, testKey)
	if err != nil || v.MaxCost() != 12 {
		t.Errorf("max cost 12: %v %v", v, err)
	}
}

// BenchmarkRefuseCost31 shows that an over-cost nonce costs no BCrypt work.
func BenchmarkRefuseCost31(b *testing.B) {
	v, _ := NewVerifier(0, testKey)
	h := "$2b$31$" + strings.Repeat("a", 53)
	for b.Loop() {
		if err := v.Verify(h); !errors.Is(err, ErrCost) {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyCost9 is the price of one genuine AIVAX nonce.
func BenchmarkVerifyCost9(b *testing.B) {
	v, _ := NewVerifier(0, testKey)
	h := mustHash(b, testKey, 9)
	for b.Loop() {
		if err := v.Verify(h); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCheckKey(t *testing.T) {
	strong := strings.Repeat("x", MinKeyBytes)
	for _, c := range []struct {
		key   string
		local bool
		want  error
	}{
		{strong, false, nil},
		{strong, true, nil},
		{strings.Repeat("x", MaxKeyBytes), false, nil},
		{strings.Repeat("x", MaxKeyBytes+1), true, ErrKeyLong},
		{strong[1:], false, ErrKeyShort},
		{"k", true, ErrKeyShort},
		{"", true, ErrKeyBlank},
		{" ", true, ErrKeyBlank},
		{strings.Repeat(" ", MinKeyBytes), false, ErrKeyBlank},
		{"\t\n\r " + strings.Repeat(" ", 40), false, ErrKeyBlank},
		{DemoKey, false, ErrKeyDemo},
		{DemoKey, true, nil},
	} {
		if err := CheckKey(c.key, c.local); !errors.Is(err, c.want) || (err == nil) != (c.want == nil) {
			t.Errorf("CheckKey(%q, local %v) = %v, want %v", c.key, c.local, err, c.want)
		}
	}
}
