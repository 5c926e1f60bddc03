package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/oncecall/oncecall/internal/canonjson"
)

// Policy says what makes two calls the same operation.
type Policy string

const (
	// PolicyArguments (the default) keys on tenant, request_id, function and
	// the canonical arguments: changed arguments are a new operation.
	PolicyArguments Policy = "arguments"
	// PolicyRequest keys on tenant, request_id and function: one operation
	// per request_id; a repeat with other arguments is refused.
	PolicyRequest Policy = "request"
)

// Policies maps function names to their policy; functions not listed use
// PolicyArguments.
type Policies map[string]Policy

// For returns the policy of function fn.
func (p Policies) For(fn string) Policy {
	if pol, ok := p[fn]; ok {
		return pol
	}
	return PolicyArguments
}

// ParsePolicies reads "fn=policy,fn=policy". Every function must be one of
// known, which it does not change; an empty string means all defaults.
func ParsePolicies(s string, known []string) (Policies, error) {
	out := Policies{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		fn, pol, ok := strings.Cut(part, "=")
		fn, pol = strings.TrimSpace(fn), strings.TrimSpace(pol)
		if !ok || fn == "" {
			return nil, fmt.Errorf("key policy %q: want function=policy", part)
		}
		if !slices.Contains(known, fn) {
			return nil, fmt.Errorf("key policy %q: unknown function %q (known: %s)", part, fn, strings.Join(slices.Sorted(slices.Values(known)), ", "))
		}
		switch Policy(pol) {
		case PolicyArguments, PolicyRequest:
			out[fn] = Policy(pol)
		default:
			return nil, fmt.Errorf("key policy %q: policy must be %q or %q", part, PolicyArguments, PolicyRequest)
		}
	}
	return out, nil
}

// KeyVersion is the version of the key derivation, the first member of
// the hashed tuple. Version 2 keys the arguments as the function will act
// on them (schema.Function.Normalize); version 1, which had no version
// member, keyed them as sent. A version's tuples cannot encode like
// another's, so keys of two derivations never collide: a new version makes
// every key new.
const KeyVersion = 2

// Key identifies one operation.
type Key struct {
	// ID is the hex SHA-256 that names the operation in the store.
	ID string
	// Fingerprint is the hex SHA-256 of the canonical arguments.
	Fingerprint string
	// Arguments is the canonical form of the arguments.
	Arguments []byte
}

// Operation is what an operation's key is made of: the caller's tenant
// (from oncecall's user record, never from the request), the request id
// the application minted for the operation, the function called, and the
// arguments as the function will act on them.
type Operation struct {
	Tenant    string
	RequestID string
	Function  string
	// Arguments are as schema.Function.Normalize returned them, so that
	// arguments that mean the same get one key.
	Arguments map[string]any
}

// Derive computes the key of op under pol: the SHA-256 of the canonical
// JSON array [KeyVersion, tenant, request id, function, arguments], the
// arguments left out under PolicyRequest. The fingerprint is taken over
// the canonical arguments. The error is only for values canonjson cannot
// encode.
func Derive(pol Policy, op Operation) (Key, error) {
	canon, err := canonjson.Marshal(op.Arguments)
	if err != nil {
		return Key{}, err
	}
	fp := sha256.Sum256(canon)
	// The tuple is encoded as a canonical JSON array, which is unambiguous:
	// no choice of fields can make two different tuples encode alike.
	tuple := make([]byte, 0, 64+len(op.Tenant)+len(op.RequestID)+len(op.Function)+len(canon))
	tuple = append(tuple, '[')
	tuple = strconv.AppendInt(tuple, KeyVersion, 10)
	tuple = append(tuple, ',')
	tuple = canonjson.AppendString(tuple, op.Tenant)
	tuple = append(tuple, ',')
	tuple = canonjson.AppendString(tuple, op.RequestID)
	tuple = append(tuple, ',')
	tuple = canonjson.AppendString(tuple, op.Function)
	if pol != PolicyRequest {
		tuple = append(tuple, ',')
		tuple = append(tuple, canon...)
	}
	tuple = append(tuple, ']')
	id := sha256.Sum256(tuple)
	return Key{ID: hex.EncodeToString(id[:]), Fingerprint: hex.EncodeToString(fp[:]), Arguments: canon}, nil
}
