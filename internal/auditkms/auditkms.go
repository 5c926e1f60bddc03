// Package auditkms makes and checks the proof an audit entry carries: a KMS
// Encrypt, under the stack's audit key (AuditKey), of the entry's digest
// (delivery.AuditProof), with an encryption context naming the ticket and
// the digest.
//
// What a proof proves: the entry, exactly as it reads (every field
// delivery.AuditProof covers, its ticket included), was encrypted under
// the audit key by a principal allowed kms:Encrypt on it. The key policy
// allows that to the decision role alone (and to an administrator only
// after changing the key policy, which CloudTrail records): a proven
// entry was written by a session of the decision role, and was not
// changed since. It does not prove the person: a holder of the role may
// write any "who". CloudTrail records each Encrypt as a management event
// (Event history keeps them 90 days, without a trail) with the caller's
// identity, its session's source identity and the encryption context, so
// the event whose context names the entry's digest names the session
// that made it. Nor does a proof show that an entry was removed: each
// entry is proven alone.
//
// A checker needs kms:Decrypt on the key. Decrypt fails unless the
// ciphertext was made under that key with the very same encryption
// context, and the plaintext must then be the entry's own digest, so a
// ciphertext made with GenerateDataKey, for another entry, or under
// another key never proves an entry.
package auditkms

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/oncecall/oncecall/internal/delivery"
)

// The encryption context's keys, as CloudTrail records them with each
// Encrypt and the key policy names them (kms:EncryptionContextKeys).
const (
	ContextTicket = "oncecall:ticket"
	ContextEntry  = "oncecall:entry"
)

// API is the part of KMS's client a Key calls.
type API interface {
	Encrypt(ctx context.Context, in *kms.EncryptInput, optFns ...func(*kms.Options)) (*kms.EncryptOutput, error)
	Decrypt(ctx context.Context, in *kms.DecryptInput, optFns ...func(*kms.Options)) (*kms.DecryptOutput, error)
}

// Key is the audit key: its ARN, which the operator gives (the stack's
// AuditKeyArn output), never one read from the table.
type Key struct {
	API API
	ARN string
}

// ErrNotAllowed is returned by Prove when KMS refuses the caller kms:Encrypt
// on the key: only the decision role may make a proof.
var ErrNotAllowed = errors.New("auditkms: kms:Encrypt on the audit key was refused: only the decision role makes an audit's proof")

// Prove makes the proof of decision d on ticket ticketID.
func (k Key) Prove(ctx context.Context, ticketID string, d delivery.Decision) ([]byte, error) {
	version, digest := delivery.AuditProof(ticketID, d)
	out, err := k.API.Encrypt(ctx, &kms.EncryptInput{
		KeyId: aws.String(k.ARN), Plaintext: []byte(version + ":" + digest),
		EncryptionContext: map[string]string{ContextTicket: ticketID, ContextEntry: digest},
	})
	if err != nil {
		var denied interface{ ErrorCode() string }
		if errors.As(err, &denied) && denied.ErrorCode() == "AccessDeniedException" {
			return nil, fmt.Errorf("%w (%s): %v", ErrNotAllowed, k.ARN, err)
		}
		return nil, fmt.Errorf("auditkms: Encrypt under %s: %w", k.ARN, err)
	}
	return out.CiphertextBlob, nil
}

// Verdict is what Check established about one entry.
type Verdict struct {
	// Proven: the entry carries a proof made under the audit key for
	// exactly what it reads.
	Proven bool
	// Why says, when not Proven, what was wrong.
	Why string
}

// Reasons an entry is not proven.
const (
	WhyNoProof  = "it carries no proof: written without the decision role's audit key"
	WhyMismatch = "its proof does not match it: changed after the proof was made, or the proof was made for another entry or under another key"
)

// Check checks the proof decision d on ticket ticketID carries. An error
// says it could not be checked (KMS refused or did not answer), never
// that the entry is forged.
func (k Key) Check(ctx context.Context, ticketID string, d delivery.Decision) (Verdict, error) {
	if len(d.Proof) == 0 {
		return Verdict{Why: WhyNoProof}, nil
	}
	version, digest := delivery.AuditProof(ticketID, d)
	out, err := k.API.Decrypt(ctx, &kms.DecryptInput{
		KeyId: aws.String(k.ARN), CiphertextBlob: d.Proof,
		EncryptionContext: map[string]string{ContextTicket: ticketID, ContextEntry: digest},
	})
	var invalid *types.InvalidCiphertextException
	var incorrect *types.IncorrectKeyException
	switch {
	case errors.As(err, &invalid), errors.As(err, &incorrect):
		return Verdict{Why: WhyMismatch}, nil
	case err != nil:
		return Verdict{}, fmt.Errorf("auditkms: Decrypt under %s: %w", k.ARN, err)
	}
	want := []byte(version + ":" + digest)
	if aws.ToString(out.KeyId) != k.ARN || subtle.ConstantTimeCompare(out.Plaintext, want) != 1 {
		return Verdict{Why: WhyMismatch}, nil
	}
	return Verdict{Proven: true}, nil
}
