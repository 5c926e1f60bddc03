package main

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
)

type samconfig struct {
	Version float64 `toml:"version"`
	Default struct {
		Global struct {
			Parameters struct {
				StackName string `toml:"stack_name"`
			} `toml:"parameters"`
		} `toml:"global"`
		Build struct {
			Parameters struct {
				Cached   bool `toml:"cached"`
				Parallel bool `toml:"parallel"`
			} `toml:"parameters"`
		} `toml:"build"`
		Deploy struct {
			Parameters map[string]any `toml:"parameters"`
		} `toml:"deploy"`
		LocalInvoke struct {
			Parameters struct {
				EnvVars string `toml:"env_vars"`
			} `toml:"parameters"`
		} `toml:"local_invoke"`
	} `toml:"default"`
}

// overridePair is one Name="value" of parameter_overrides.
var overridePair = regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)

// TestSAMConfig reads samconfig.toml as SAM does and checks it against
// template.yaml: a first deploy with it succeeds, and local invokes can set
// what they mean to.
func TestSAMConfig(t *testing.T) {
	var c samconfig
	_, err := toml.DecodeFile("../../samconfig.toml", &c)
	if err != nil {
		t.Fatalf("samconfig.toml: %v", err)
	}
	if c.Version != 0.1 || c.Default.Global.Parameters.StackName == "" {
		t.Errorf("version %v, stack_name %q", c.Version, c.Default.Global.Parameters.StackName)
	}
	if !c.Default.Build.Parameters.Cached || !c.Default.Build.Parameters.Parallel {
		t.Error("build is not cached and parallel")
	}
	d := c.Default.Deploy.Parameters
	if _, ok := d["region"]; ok {
		t.Error("a region is committed; it is the user's to choose")
	}
	for k, want := range map[string]any{"capabilities": "CAPABILITY_IAM", "confirm_changeset": true, "resolve_s3": true} {
		if d[k] != want {
			t.Errorf("deploy %s = %v, want %v", k, d[k], want)
		}
	}
	over, _ := d["parameter_overrides"].(string)
	overrides := map[string]string{}
	for _, m := range overridePair.FindAllStringSubmatch(over, -1) {
		overrides[m[1]] = m[2]
	}
	// The committed deploy is the safe one: it overrides no parameter with
	// anything but the template's default, so that what the docs say the
	// defaults defend (NonceMaxCost 9, the reserved concurrency, deletion
	// protection, the trail) is what `sam deploy` deploys.
	params := readTemplate(t)["Parameters"].(map[string]any)
	for name, v := range overrides {
		p, ok := params[name].(map[string]any)
		if !ok {
			t.Errorf("samconfig.toml overrides %s, which template.yaml does not have", name)
			continue
		}
		if def := scalar(p["Default"]); v != def {
			t.Errorf("samconfig.toml deploys %s=%q over the template's default %q: a deploy from the repository would not be the one the docs describe", name, v, def)
		}
	}
	// deploy fails the test on an unknown parameter or a value its
	// constraints refuse; the resulting stack must load as configuration.
	s := deploy(t, overrides)
	env := s.env(t)
	env["TABLE_NAME"], env["HOOK_KEY_SECRET_ARN"] = "oncecall-Table-ABC", existingSecret
	if s.Typed.Resources["HookKeySecret"] == nil && overrides["HookKeySecretArn"] == "" {
		t.Error("no hook key secret on a first deploy")
	}
	if _, err := config.Load(func(k string) string { return env[k] }, config.Lambda, app.FunctionNames()); err != nil {
		t.Errorf("a deploy with samconfig.toml's overrides does not start: %v", err)
	}

	// sam local invoke --env-vars only overrides variables the template
	// declares: every variable of the file must be one.
	raw, err := os.ReadFile("../../" + c.Default.LocalInvoke.Parameters.EnvVars)
	if err != nil {
		t.Fatalf("local_invoke env_vars: %v", err)
	}
	var byFunction map[string]map[string]string
	if err := json.Unmarshal(raw, &byFunction); err != nil {
		t.Fatal(err)
	}
	vars, ok := byFunction["CallbackFunction"]
	if !ok || len(byFunction) != 1 {
		t.Fatalf("%s is not keyed by CallbackFunction", c.Default.LocalInvoke.Parameters.EnvVars)
	}
	for k := range vars {
		if _, declared := env[k]; !declared {
			t.Errorf("%s sets %s, which template.yaml does not declare: SAM would ignore it", c.Default.LocalInvoke.Parameters.EnvVars, k)
		}
	}
	if vars["HOOK_KEY"] == "" || vars["HOOK_KEY_SECRET_ARN"] != "" || vars["DYNAMODB_ENDPOINT"] == "" {
		t.Errorf("the local env must set HOOK_KEY and DYNAMODB_ENDPOINT and empty HOOK_KEY_SECRET_ARN: %v", vars)
	}
}
