package localkms_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/kms/types"

	"github.com/oncecall/oncecall/internal/local/localkms"
)

// TestEncryptionContextIsBound: the server built and started from scratch
// encrypts under the seeded audit key and decrypts only with the same
// encryption context and that key.
func TestEncryptionContextIsBound(t *testing.T) {
	_, c := localkms.ForTest(t)
	ctx := context.Background()
	ec := map[string]string{"oncecall:entry": "a"}
	out, err := c.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(localkms.AuditKey), Plaintext: []byte("p"), EncryptionContext: ec})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Decrypt(ctx, &kms.DecryptInput{KeyId: aws.String(localkms.AuditKey), CiphertextBlob: out.CiphertextBlob, EncryptionContext: ec})
	if err != nil || string(got.Plaintext) != "p" || aws.ToString(got.KeyId) != localkms.AuditKey {
		t.Fatalf("Decrypt: %+v, %v", got, err)
	}
	for name, in := range map[string]*kms.DecryptInput{
		"another context": {KeyId: aws.String(localkms.AuditKey), CiphertextBlob: out.CiphertextBlob, EncryptionContext: map[string]string{"oncecall:entry": "b"}},
		"another key":     {KeyId: aws.String(localkms.OtherKey), CiphertextBlob: out.CiphertextBlob, EncryptionContext: ec},
	} {
		var invalid *types.InvalidCiphertextException
		var incorrect *types.IncorrectKeyException
		if _, err := c.Decrypt(ctx, in); !errors.As(err, &invalid) && !errors.As(err, &incorrect) {
			t.Errorf("%s: %v, want InvalidCiphertextException or IncorrectKeyException", name, err)
		}
	}
}
