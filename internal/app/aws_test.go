package app_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
)

func env(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }

// TestAWSConfigFromLambdasEnvironment: on Lambda the credentials come from
// the variables Lambda sets, with the session token, and AWS_ENDPOINT_URL
// is honoured as the SDK's shared configuration does.
func TestAWSConfigFromLambdasEnvironment(t *testing.T) {
	c, err := app.AWSConfig(env(map[string]string{"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret",
		"AWS_SESSION_TOKEN": "token", "AWS_ENDPOINT_URL": "http://10.0.0.1:4566"}), config.Config{Region: "eu-west-1"})
	if err != nil {
		t.Fatal(err)
	}
	creds, err := c.Credentials.Retrieve(context.Background())
	if err != nil || creds.AccessKeyID != "AKIDEXAMPLE" || creds.SecretAccessKey != "secret" || creds.SessionToken != "token" {
		t.Fatalf("credentials %+v, %v", creds, err)
	}
	if c.Region != "eu-west-1" || aws.ToString(c.BaseEndpoint) != "http://10.0.0.1:4566" || c.HTTPClient == nil {
		t.Fatalf("config region %q endpoint %q", c.Region, aws.ToString(c.BaseEndpoint))
	}
}

// TestAWSConfigRefusals: without credentials or a region the function says
// which variable to set; a loopback endpoint needs neither.
func TestAWSConfigRefusals(t *testing.T) {
	creds := map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "b"}
	if _, err := app.AWSConfig(env(nil), config.Config{Region: "eu-west-1"}); err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Errorf("no credentials: %v", err)
	}
	if _, err := app.AWSConfig(env(creds), config.Config{}); err == nil || !strings.Contains(err.Error(), config.EnvRegion) {
		t.Errorf("no region: %v", err)
	}
	c, err := app.AWSConfig(env(nil), config.Config{Endpoint: "http://127.0.0.1:8000"})
	if err != nil {
		t.Fatalf("loopback: %v", err)
	}
	if got, _ := c.Credentials.Retrieve(context.Background()); got.AccessKeyID != "local" {
		t.Errorf("loopback credentials %+v", got)
	}
}
