package nonce

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// FuzzNonce feeds the nonce parser and the verifier any header. Cost must
// never accept what BCrypt itself cannot parse and must agree with it on the
// cost; Verify must refuse malformed and over-cost values with the matching
// error before any BCrypt work, accept only a genuine hash of the key, and
// never quote the header in its error. The verifier's maximum is MinCost so
// that only the cheapest hashes cost BCrypt work while fuzzing.
func FuzzNonce(f *testing.F) {
	good, err := Generate(testKey, MinCost)
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{good, "$2b$31$" + strings.Repeat("A", 53), good[:59], "", testKey} {
		f.Add(s)
	}
	v, err := NewVerifier(MinCost, testKey)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, h string) {
		cost, cerr := Cost(h)
		if cerr == nil {
			if len(h) != HashLength || cost < MinCost || cost > 31 {
				t.Fatalf("Cost(%q) = %d", h, cost)
			}
			bc, err := bcrypt.Cost([]byte(h))
			if err != nil || bc != cost {
				t.Fatalf("Cost(%q) = %d but BCrypt reads %d, %v", h, cost, bc, err)
			}
		} else if !errors.Is(cerr, ErrMalformed) && !errors.Is(cerr, ErrCost) {
			t.Fatalf("Cost(%q): unexpected error %v", h, cerr)
		}
		verr := v.Verify(h)
		switch {
		case h == "":
			if !errors.Is(verr, ErrMissing) {
				t.Fatalf("Verify(\"\") = %v", verr)
			}
		case cerr != nil:
			if !errors.Is(verr, cerr) {
				t.Fatalf("Verify(%q) = %v, Cost said %v", h, verr, cerr)
			}
		case cost > v.MaxCost():
			if !errors.Is(verr, ErrCost) {
				t.Fatalf("Verify(%q) = %v, want ErrCost", h, verr)
			}
		case verr == nil:
			if bcrypt.CompareHashAndPassword([]byte(h), []byte(testKey)) != nil {
				t.Fatalf("Verify accepted %q, which is not a hash of the key", h)
			}
		case !errors.Is(verr, ErrMismatch):
			t.Fatalf("Verify(%q) = %v", h, verr)
		}
		if verr != nil && len(h) > 8 && strings.Contains(verr.Error(), h) {
			t.Fatalf("the error quotes the header: %v", verr)
		}
	})
}
