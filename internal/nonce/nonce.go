package nonce

import (
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/bcrypt"
)

// Limits of the nonce format and of the hook key.
const (
	// HashLength is the length of every BCrypt hash in modular crypt format:
	// "$2b$", two cost digits, "$", 22 characters of salt and 31 of hash.
	HashLength = 60
	// MinCost is the lowest cost BCrypt defines.
	MinCost = bcrypt.MinCost
	// DefaultMaxCost is the highest cost a Verifier accepts unless told
	// otherwise: AIVAX hashes at cost 9, so a forged nonce of cost 10 or
	// more is refused without any BCrypt work.
	DefaultMaxCost = 9
	// HardMaxCost caps any configured maximum: every step doubles the work,
	// and cost 14 already takes about a second of CPU.
	HardMaxCost = 14
	// MaxKeyBytes is the longest hook key BCrypt can use; it reads no more
	// than 72 bytes of its input.
	MaxKeyBytes = 72
	// MinKeyBytes is the shortest hook key accepted: 32 random characters
	// are out of reach of guessing, even offline against a captured nonce.
	MinKeyBytes = 32
)

// DemoKey is the hook key of local runs. It is public (it is in this
// repository), so CheckKey refuses it for anything but a local run.
const DemoKey = "local-demo-hook-key-0123456789"

// Why CheckKey refuses a hook key, each a complete message that never
// contains the key. CheckKey wraps them with how to fix it: match them with
// errors.Is.
var (
	ErrKeyBlank = errors.New("hook key is empty or only white space")
	ErrKeyShort = fmt.Errorf("hook key is shorter than %d bytes", MinKeyBytes)
	ErrKeyLong  = fmt.Errorf("hook key is longer than %d bytes, all that BCrypt reads", MaxKeyBytes)
	ErrKeyDemo  = errors.New("hook key is the public demo key, which only a local run may use")
)

// generate is how to make a key fit for purpose, added to a refusal.
const generate = "generate one, such as with `openssl rand -base64 32`"

// CheckKey reports what makes k unfit as a hook key, or nil: blank, shorter
// than MinKeyBytes, longer than MaxKeyBytes, or DemoKey. A local run (the
// local server, a local store) may use DemoKey, and only that short key.
// The error wraps ErrKeyBlank, ErrKeyShort, ErrKeyLong or ErrKeyDemo and
// says how to fix it.
func CheckKey(k string, local bool) error {
	switch {
	case strings.TrimSpace(k) == "":
		return fmt.Errorf("%w: %s", ErrKeyBlank, generate)
	case len(k) > MaxKeyBytes:
		return fmt.Errorf("%w: use a shorter one", ErrKeyLong)
	case k == DemoKey && local:
		return nil
	case k == DemoKey:
		return fmt.Errorf("%w: %s", ErrKeyDemo, generate)
	case len(k) < MinKeyBytes:
		return fmt.Errorf("%w: %s", ErrKeyShort, generate)
	}
	return nil
}

// Errors returned by Verify. They never contain the nonce or the key.
var (
	// ErrMissing means the header was absent or empty.
	ErrMissing = errors.New("nonce: X-Request-Nonce header is missing")
	// ErrMalformed means the header is not a BCrypt hash of a supported variant.
	ErrMalformed = errors.New("nonce: X-Request-Nonce is not a BCrypt hash ($2a$, $2b$ or $2y$, 60 characters)")
	// ErrCost means the hash's cost is outside [MinCost, the configured maximum].
	ErrCost = errors.New("nonce: X-Request-Nonce cost is outside the accepted range")
	// ErrMismatch means the hash is well formed but not a hash of any accepted key.
	ErrMismatch = errors.New("nonce: X-Request-Nonce does not match the hook key")
)

// Verifier checks nonces against the current hook key and, during a rotation
// grace period, the previous one.
type Verifier struct {
	keys    [][]byte
	maxCost int
}

// NewVerifier returns a Verifier for the given hook keys, tried in order
// (current first, then previous). Empty keys are skipped; at least one key is
// required. maxCost 0 means DefaultMaxCost.
func NewVerifier(maxCost int, keys ...string) (*Verifier, error) {
	if maxCost == 0 {
		maxCost = DefaultMaxCost
	}
	if maxCost < MinCost || maxCost > HardMaxCost {
		return nil, fmt.Errorf("nonce: maximum cost %d is outside [%d, %d]", maxCost, MinCost, HardMaxCost)
	}
	v := &Verifier{maxCost: maxCost}
	for _, k := range keys {
		if k == "" {
			continue
		}
		if len(k) > MaxKeyBytes {
			return nil, fmt.Errorf("nonce: a hook key is %d bytes; BCrypt uses at most %d", len(k), MaxKeyBytes)
		}
		v.keys = append(v.keys, []byte(k))
	}
	if len(v.keys) == 0 {
		return nil, errors.New("nonce: no hook key configured")
	}
	return v, nil
}

// MaxCost reports the highest cost the Verifier accepts.
func (v *Verifier) MaxCost() int { return v.maxCost }

// Verify checks one header value. It returns nil on a match and otherwise
// one of ErrMissing, ErrMalformed, ErrCost or ErrMismatch. Malformed and
// over-cost hashes are refused without any BCrypt work (Precheck).
func (v *Verifier) Verify(header string) error {
	if err := Precheck(header, v.maxCost); err != nil {
		return err
	}
	hash := []byte(header)
	for _, k := range v.keys {
		if compare(hash, k) == nil {
			return nil
		}
	}
	return ErrMismatch
}

// Precheck is the part of a nonce check that takes no BCrypt work: it
// returns ErrMissing, ErrMalformed or ErrCost for a header that is not
// worth verifying with maxCost the highest cost accepted, and nil for one
// that is (which may still not match the key).
func Precheck(header string, maxCost int) error {
	if header == "" {
		return ErrMissing
	}
	cost, err := Cost(header)
	if err != nil {
		return err
	}
	if cost > maxCost {
		return ErrCost
	}
	return nil
}

// compare is the BCrypt work of Verify, one call per key tried (a
// variable so that a test can count the calls).
var compare = bcrypt.CompareHashAndPassword

// Cost parses a BCrypt hash's shape and returns its cost without doing any
// BCrypt work. It returns ErrMalformed for anything but a 60-character
// $2a$/$2b$/$2y$ hash with a bcrypt-base64 salt and digest, and ErrCost for
// a cost below MinCost or above 31.
func Cost(h string) (int, error) {
	if len(h) != HashLength || h[0] != '$' || h[1] != '2' || h[3] != '$' || h[6] != '$' {
		return 0, ErrMalformed
	}
	switch h[2] {
	case 'a', 'b', 'y':
	default:
		return 0, ErrMalformed
	}
	d1, d2 := h[4], h[5]
	if d1 < '0' || d1 > '9' || d2 < '0' || d2 > '9' {
		return 0, ErrMalformed
	}
	for i := 7; i < HashLength; i++ {
		if !isBcryptBase64(h[i]) {
			return 0, ErrMalformed
		}
	}
	cost := int(d1-'0')*10 + int(d2-'0')
	if cost < MinCost || cost > 31 {
		return 0, ErrCost
	}
	return cost, nil
}

// isBcryptBase64 reports whether c is in BCrypt's base64 alphabet
// ("./A-Za-z0-9").
func isBcryptBase64(c byte) bool {
	return c == '.' || c == '/' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
}

// Generate returns a fresh nonce for key at the given cost, the way AIVAX
// makes one. It is for local tools and tests.
func Generate(key string, cost int) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(key), cost)
	return string(h), err
}
