package main

import (
	"encoding/json"
	"os"
	"strings"
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

// overridden returns where samconfig.toml's text raw sets parameter
// overrides. SAM CLI reads parameter_overrides from any command's section
// and from [<env>.global.parameters], as a string of Name=value or
// ParameterKey=,ParameterValue= pairs (quoted or not) or as a TOML list,
// and any of them can set a parameter to less than its default; rather
// than parse each form as SAM CLI does, the committed file sets none, in
// any section of any environment, under any spelling of the key.
func overridden(raw []byte) []string {
	var doc map[string]any
	if err := toml.Unmarshal(raw, &doc); err != nil {
		return []string{"samconfig.toml: " + err.Error()}
	}
	var found []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		if list, ok := v.([]map[string]any); ok {
			for _, m := range list {
				walk(path, m)
			}
			return
		}
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, child := range m {
			at := strings.TrimPrefix(path+"."+k, ".")
			if strings.ReplaceAll(strings.ToLower(k), "-", "_") == "parameter_overrides" {
				found = append(found, "samconfig.toml sets "+at+": a deploy from the repository must get every default of template.yaml; pass overrides with --parameter-overrides instead")
			}
			walk(at, child)
		}
	}
	walk("", doc)
	return found
}

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
	file, err := os.ReadFile("../../samconfig.toml")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range overridden(file) {
		t.Error(p)
	}
	// deploy fails the test on an unknown parameter or a value its
	// constraints refuse; the resulting stack must load as configuration.
	s := deploy(t, nil)
	env := s.env(t)
	env["TABLE_NAME"], env["HOOK_KEY_SECRET_ARN"] = "oncecall-Table-ABC", existingSecret
	if s.Typed.Resources["HookKeySecret"] == nil {
		t.Error("no hook key secret on a first deploy")
	}
	if _, err := config.Load(func(k string) string { return env[k] }, config.Lambda, app.FunctionNames()); err != nil {
		t.Errorf("a deploy with samconfig.toml does not start: %v", err)
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

// TestSAMConfigGuardReadsEveryForm: every form in which SAM CLI reads
// parameter overrides from samconfig.toml is refused by the guard
// TestSAMConfig runs, not only Name="value" pairs in [default.deploy].
func TestSAMConfigGuardReadsEveryForm(t *testing.T) {
	base := "version = 0.1\n\n[default.deploy.parameters]\ncapabilities = \"CAPABILITY_IAM\"\n"
	forms := map[string]string{
		"quoted pairs":                  base + `parameter_overrides = "NonceMaxCost=\"10\" ReservedConcurrency=\"-1\""` + "\n",
		"unquoted pairs":                base + `parameter_overrides = "NonceMaxCost=10 ReservedConcurrency=-1"` + "\n",
		"ParameterKey= ParameterValue=": base + `parameter_overrides = "ParameterKey=NonceMaxCost,ParameterValue=10 ParameterKey=ReservedConcurrency,ParameterValue=-1"` + "\n",
		"a TOML list":                   base + `parameter_overrides = ["NonceMaxCost=10", "ReservedConcurrency=-1"]` + "\n",
		"the global section":            base + "\n[default.global.parameters]\n" + `parameter_overrides = "NonceMaxCost=10 ReservedConcurrency=-1"` + "\n",
		"another environment":           base + "\n[prod.deploy.parameters]\n" + `parameter_overrides = "NonceMaxCost=10"` + "\n",
		"a dotted key":                  "version = 0.1\n" + `default.deploy.parameters.parameter_overrides = "NonceMaxCost=10"` + "\n",
		"a quoted key":                  base + `"parameter_overrides" = "NonceMaxCost=10"` + "\n",
		"an override set to a default":  base + `parameter_overrides = "NonceMaxCost=\"9\""` + "\n",
	}
	for name, text := range forms {
		if problems := overridden([]byte(text)); len(problems) == 0 {
			t.Errorf("%s: the guard passes\n%s", name, text)
		}
	}
	if problems := overridden([]byte(base)); len(problems) != 0 {
		t.Errorf("no overrides: %v", problems)
	}
}
