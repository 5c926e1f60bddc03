package nonce_test

import (
	"errors"
	"fmt"

	"github.com/oncecall/oncecall/internal/nonce"
)

// AIVAX sends a BCrypt hash of the hook key with every request; a Verifier
// checks it against the current key (and, during a rotation, the previous
// one). A malformed hash is refused before any BCrypt work.
func ExampleVerifier_Verify() {
	const key = "example-hook-key-0123456789abcdef"
	v, err := nonce.NewVerifier(nonce.DefaultMaxCost, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	good, _ := nonce.Generate(key, nonce.MinCost)
	forged, _ := nonce.Generate("another-hook-key-0123456789abcdef", nonce.MinCost)

	fmt.Println(v.Verify(good))
	fmt.Println(errors.Is(v.Verify(forged), nonce.ErrMismatch))
	fmt.Println(errors.Is(v.Verify("not a hash"), nonce.ErrMalformed))
	fmt.Println(errors.Is(v.Verify(""), nonce.ErrMissing))
	// Output:
	// <nil>
	// true
	// true
	// true
}

// CheckKey says what makes a hook key unfit, and how to fix it; its
// errors match the package's sentinels with errors.Is.
func ExampleCheckKey() {
	err := nonce.CheckKey("hunter2", false)
	fmt.Println(errors.Is(err, nonce.ErrKeyShort))
	fmt.Println(err)
	fmt.Println(nonce.CheckKey(nonce.DemoKey, true))
	// Output:
	// true
	// hook key is shorter than 32 bytes: generate one, such as with `openssl rand -base64 32`
	// <nil>
}
