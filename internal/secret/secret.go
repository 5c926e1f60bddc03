// Package secret reads the hook key and the destination's credentials from
// AWS Secrets Manager.
//
// The hook key secret's value is either the plain key, or a JSON object
// {"current": "...", "previous": "...", "previous_until": "<RFC 3339>"}:
// during a rotation both keys are accepted, so a hook-key roll in AIVAX
// drops no call, and the previous key is refused after previous_until, or,
// without one, PreviousLife after the secret's value was written. The
// value is read at cold start and again every RefreshInterval (Rotating),
// and never logged.
package secret

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/oncecall/oncecall/internal/nonce"
)

// Getter is the part of the Secrets Manager client used here.
type Getter interface {
	GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Keys is the hook key and, during a rotation, the one before it.
type Keys struct {
	Current  string `json:"current"`
	Previous string `json:"previous"`
	// PreviousUntil, when set, is when the previous key stops being
	// accepted. Parse leaves it zero when the value names no end: HookKeys
	// then ends the previous key PreviousLife after the value was written.
	PreviousUntil time.Time `json:"previous_until"`
}

// Check reports the first key of k unfit for purpose (nonce.CheckKey, with
// local as there), naming its member of the secret; an absent previous key
// is fine. The error wraps nonce's, for errors.Is.
func (k Keys) Check(local bool) error {
	for _, m := range []struct{ name, key string }{{"current", k.Current}, {"previous", k.Previous}} {
		if m.key == "" && m.name == "previous" {
			continue
		}
		if err := nonce.CheckKey(m.key, local); err != nil {
			return fmt.Errorf("hook key secret, %q key: %w", m.name, err)
		}
	}
	return nil
}

// PreviousLife is how long a previous key written without previous_until is
// accepted after the secret's value was written (the version's
// CreatedDate): a rotation left half done still ends. Well past the
// RefreshInterval a rotation waits before AIVAX changes its key.
const PreviousLife = 24 * time.Hour

// HookKeys fetches and parses secret id (an ARN or name). A previous key
// without previous_until ends PreviousLife after the secret's current
// value was written; a value that has a previous key without an end and
// no creation date is refused, since nothing would end that key.
func HookKeys(ctx context.Context, g Getter, id string) (Keys, error) {
	out, err := g.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &id})
	if err != nil {
		return Keys{}, fmt.Errorf("read hook key secret: %w", err)
	}
	if out.SecretString == nil {
		return Keys{}, errors.New("hook key secret has no string value")
	}
	k, err := Parse(*out.SecretString)
	if err != nil || k.Previous == "" || !k.PreviousUntil.IsZero() {
		return k, err
	}
	if out.CreatedDate == nil || out.CreatedDate.IsZero() {
		return Keys{}, errors.New(`hook key secret has a "previous" key without "previous_until", and Secrets Manager gave no creation date to end it from: add "previous_until"`)
	}
	k.PreviousUntil = out.CreatedDate.Add(PreviousLife)
	return k, nil
}

// Value fetches the string value of secret id; what names the secret in
// errors, which never quote the value.
func Value(ctx context.Context, g Getter, id, what string) (string, error) {
	out, err := g.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &id})
	if err != nil {
		return "", fmt.Errorf("read %s secret: %w", what, err)
	}
	if out.SecretString == nil {
		return "", fmt.Errorf("%s secret has no string value", what)
	}
	return *out.SecretString, nil
}

// Parse reads a secret value: a JSON object with "current" (and optionally
// "previous"), or the plain key.
func Parse(v string) (Keys, error) {
	v = strings.TrimSpace(v)
	if strings.HasPrefix(v, "{") {
		var k Keys
		dec := json.NewDecoder(strings.NewReader(v))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&k); err != nil {
			return Keys{}, errors.New(`hook key secret is JSON but not {"current": "...", "previous": "...", "previous_until": "<RFC 3339 time>"}`)
		}
		if k.Current == "" {
			return Keys{}, errors.New(`hook key secret has no "current" key`)
		}
		if !k.PreviousUntil.IsZero() && k.Previous == "" {
			return Keys{}, errors.New(`hook key secret has "previous_until" but no "previous" key: remove it, or add the key it ends`)
		}
		return k, nil
	}
	if v == "" {
		return Keys{}, errors.New("hook key secret is empty")
	}
	return Keys{Current: v}, nil
}
