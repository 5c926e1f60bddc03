package auditkms_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/aws/smithy-go"
	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/auditkms"
	"github.com/oncecall/oncecall/internal/delivery"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const keyARN = "arn:aws:kms:us-east-1:111122223333:key/6f1c2a8e-0b3d-4e5f-8a9b-0c1d2e3f4a5b"

// fakeKMS answers Encrypt and Decrypt as told, keeping what it was asked.
type fakeKMS struct {
	encErr, decErr error
	dec            *kms.DecryptOutput
	decIn          *kms.DecryptInput
}

func (f *fakeKMS) Encrypt(_ context.Context, in *kms.EncryptInput, _ ...func(*kms.Options)) (*kms.EncryptOutput, error) {
	if f.encErr != nil {
		return nil, f.encErr
	}
	return &kms.EncryptOutput{CiphertextBlob: []byte("ct"), KeyId: in.KeyId}, nil
}

func (f *fakeKMS) Decrypt(_ context.Context, in *kms.DecryptInput, _ ...func(*kms.Options)) (*kms.DecryptOutput, error) {
	f.decIn = in
	return f.dec, f.decErr
}

// TestProveRefusedIsNotAllowed: KMS refusing kms:Encrypt (the caller is not
// the decision role) is ErrNotAllowed, so the tool can say why; another
// failure is not.
func TestProveRefusedIsNotAllowed(t *testing.T) {
	d := delivery.Decision{Action: "settle.abandoned", At: time.UnixMilli(1)}
	denied := &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not allowed"}
	if _, err := (auditkms.Key{API: &fakeKMS{encErr: denied}, ARN: keyARN}).Prove(context.Background(), "t-1", d); !errors.Is(err, auditkms.ErrNotAllowed) {
		t.Errorf("Prove refused: %v, want ErrNotAllowed", err)
	}
	other := errors.New("connection reset")
	if _, err := (auditkms.Key{API: &fakeKMS{encErr: other}, ARN: keyARN}).Prove(context.Background(), "t-1", d); errors.Is(err, auditkms.ErrNotAllowed) || !errors.Is(err, other) {
		t.Errorf("Prove failing: %v, want the failure, not ErrNotAllowed", err)
	}
}

// TestCheck: an entry is proven only when KMS decrypts its proof under the
// key given, with the entry's own context, to the entry's own digest; a
// KMS failure is an error, never a verdict.
func TestCheck(t *testing.T) {
	d := delivery.Decision{Actor: delivery.Actor{Who: "arn:aws:iam::111122223333:user/alice"}, Action: "settle.abandoned", At: time.UnixMilli(1)}
	version, digest := delivery.AuditProof("t-1", d)
	right := []byte(version + ":" + digest)
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		proof  []byte
		f      *fakeKMS
		proven bool
		why    string
		err    bool
	}{
		{"genuine", []byte("ct"), &fakeKMS{dec: &kms.DecryptOutput{KeyId: aws.String(keyARN), Plaintext: right}}, true, "", false},
		{"no proof", nil, &fakeKMS{}, false, auditkms.WhyNoProof, false},
		{"another key answered", []byte("ct"), &fakeKMS{dec: &kms.DecryptOutput{KeyId: aws.String(keyARN + "0"), Plaintext: right}}, false, auditkms.WhyMismatch, false},
		{"another digest", []byte("ct"), &fakeKMS{dec: &kms.DecryptOutput{KeyId: aws.String(keyARN), Plaintext: []byte(version + ":00")}}, false, auditkms.WhyMismatch, false},
		{"another context", []byte("ct"), &fakeKMS{decErr: &types.InvalidCiphertextException{}}, false, auditkms.WhyMismatch, false},
		{"another key", []byte("ct"), &fakeKMS{decErr: &types.IncorrectKeyException{}}, false, auditkms.WhyMismatch, false},
		{"KMS refused", []byte("ct"), &fakeKMS{decErr: &smithy.GenericAPIError{Code: "AccessDeniedException"}}, false, "", true},
	} {
		v, err := auditkms.Key{API: c.f, ARN: keyARN}.Check(ctx, "t-1", delivery.Decision{Actor: d.Actor, Action: d.Action, At: d.At, Proof: c.proof})
		if v.Proven != c.proven || v.Why != c.why || (err != nil) != c.err {
			t.Errorf("%s: %+v, %v; want proven %v (%q), error %v", c.name, v, err, c.proven, c.why, c.err)
		}
		if in := c.f.decIn; in != nil && (aws.ToString(in.KeyId) != keyARN || in.EncryptionContext[auditkms.ContextTicket] != "t-1" || in.EncryptionContext[auditkms.ContextEntry] != digest) {
			t.Errorf("%s: Decrypt asked %+v, want the key given and the entry's context", c.name, in)
		}
	}
}
