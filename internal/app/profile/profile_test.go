package profile_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/app/profile"
	"github.com/oncecall/oncecall/internal/config"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestAWSConfig: a loopback endpoint gets the local store's static
// credentials; another endpoint the default chain, which here finds the
// credentials of the environment.
func TestAWSConfig(t *testing.T) {
	c, err := profile.AWSConfig(context.Background(), config.Config{Endpoint: "http://127.0.0.1:8000"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := c.Credentials.Retrieve(context.Background()); got.AccessKeyID != "local" {
		t.Errorf("loopback credentials %+v", got)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDCHAIN")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "secret")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_PROFILE", "")
	c, err = profile.AWSConfig(context.Background(), config.Config{Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Credentials.Retrieve(context.Background())
	if err != nil || got.AccessKeyID != "AKIDCHAIN" || c.Region != "eu-west-1" {
		t.Errorf("default chain %+v, %v, region %q", got, err, c.Region)
	}
}
