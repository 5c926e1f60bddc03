// Package secret reads the hook key from AWS Secrets Manager.
//
// The secret's value is either the plain hook key, or a JSON object
// {"current": "...", "previous": "..."}: during a rotation both keys are
// accepted, so a hook-key roll in AIVAX drops no call. The value is read once
// per cold start and never logged.
package secret

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// Getter is the part of the Secrets Manager client used here.
type Getter interface {
	GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Keys is the hook key and, during a rotation, the one before it.
type Keys struct {
	Current  string `json:"current"`
	Previous string `json:"previous"`
}

// HookKeys fetches and parses secret id (an ARN or name).
func HookKeys(ctx context.Context, g Getter, id string) (Keys, error) {
	out, err := g.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: &id})
	if err != nil {
		return Keys{}, fmt.Errorf("read hook key secret: %w", err)
	}
	if out.SecretString == nil {
		return Keys{}, errors.New("hook key secret has no string value")
	}
	return Parse(*out.SecretString)
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
			return Keys{}, errors.New(`hook key secret is JSON but not {"current": "...", "previous": "..."}`)
		}
		if k.Current == "" {
			return Keys{}, errors.New(`hook key secret has no "current" key`)
		}
		return k, nil
	}
	if v == "" {
		return Keys{}, errors.New("hook key secret is empty")
	}
	return Keys{Current: v}, nil
}
