package nonce

import (
	"errors"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// countCompares counts Verify's BCrypt calls until the test ends.
func countCompares(t *testing.T) *int {
	t.Helper()
	n := new(int)
	compare = func(hash, key []byte) error {
		*n++
		return bcrypt.CompareHashAndPassword(hash, key)
	}
	t.Cleanup(func() { compare = bcrypt.CompareHashAndPassword })
	return n
}

// TestPreChecksRunNoBCrypt: a well-formed nonce over the maximum cost, and
// every malformed one, is refused before any BCrypt work (by Precheck
// alone too); a nonce within the cost is checked against each key, once. This is what keeps a flood
// of forged cost-10 nonces cheap at NONCE_MAX_COST 9.
func TestPreChecksRunNoBCrypt(t *testing.T) {
	const key, other = "the-hook-key-0123456789", "a-previous-key-9876543210"
	wrong10, err := Generate("not-the-hook-key", 10)
	if err != nil {
		t.Fatal(err)
	}
	wrong4, err := Generate("not-the-hook-key", MinCost)
	if err != nil {
		t.Fatal(err)
	}
	right4, err := Generate(key, MinCost)
	if err != nil {
		t.Fatal(err)
	}
	v9, err := NewVerifier(9, key, other)
	if err != nil {
		t.Fatal(err)
	}
	v10, err := NewVerifier(10, key, other)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		v        *Verifier
		header   string
		want     error
		compares int
	}{
		{"cost 10, maximum 9", v9, wrong10, ErrCost, 0},
		{"cost 31, maximum 9", v9, "$2a$31$" + wrong10[7:], ErrCost, 0},
		{"cost 03", v9, "$2a$03$" + wrong10[7:], ErrCost, 0},
		{"59 characters", v9, wrong10[:59], ErrMalformed, 0},
		{"$2x$", v9, "$2x$" + wrong10[4:], ErrMalformed, 0},
		{"a character outside bcrypt's base64", v9, wrong4[:40] + "!" + wrong4[41:], ErrMalformed, 0},
		{"cost 10, maximum 10 (no pre-check for it)", v10, wrong10, ErrMismatch, 2},
		{"cost 4, wrong key", v9, wrong4, ErrMismatch, 2},
		{"cost 4, the current key", v9, right4, nil, 1},
	} {
		n := countCompares(t)
		if err := tc.v.Verify(tc.header); !errors.Is(err, tc.want) && (err != nil || tc.want != nil) {
			t.Errorf("%s: Verify = %v, want %v", tc.name, err, tc.want)
		}
		if *n != tc.compares {
			t.Errorf("%s: %d BCrypt comparisons, want %d", tc.name, *n, tc.compares)
		}
		// Precheck refuses what Verify refuses without BCrypt, and
		// passes what needs it.
		want := tc.want
		if tc.compares > 0 {
			want = nil
		}
		if err := Precheck(tc.header, tc.v.MaxCost()); !errors.Is(err, want) && (err != nil || want != nil) {
			t.Errorf("%s: Precheck = %v, want %v", tc.name, err, want)
		}
		if *n != tc.compares {
			t.Errorf("%s: Precheck did BCrypt work", tc.name)
		}
	}
}
