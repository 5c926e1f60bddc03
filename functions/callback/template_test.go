package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/lambda"
	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/metrics"
	"github.com/oncecall/oncecall/internal/protocol"
)

// How template.yaml is read.
//
// goformation (v7.14.9) is the parser: its YAML reader turns the short-form
// tags (!Ref, !GetAtt, !Sub, !If, ...) into CloudFormation's long form, and
// its typed resource models, which refuse unknown properties, decode every
// resource. Two of its parts cannot be used as they are, and the test says
// so rather than weakening a check:
//
//   - Its intrinsic processor resolves Ref and Fn::GetAtt of resources to
//     nothing and evaluates Fn::If only against unevaluated conditions, so
//     the processed template loses exactly what least privilege is about
//     (which resource a statement names). evaluate below resolves the
//     intrinsics the template uses, for a given set of parameter values,
//     and keeps resource references as "ref:Name" and "getatt:Name.Attr".
//   - Its AWS::Serverless::Function model predates LoggingConfig, which SAM
//     passes through to AWS::Lambda::Function unchanged; that property is
//     decoded with goformation's AWS::Lambda::Function model of it instead.

const templatePath = "../../template.yaml"

// Pseudo parameter values used to evaluate the template.
var pseudo = map[string]string{
	"AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012", "AWS::StackName": "oncecall",
	"AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com",
}

// noValue stands for AWS::NoValue until its property is dropped.
type noValueT struct{}

var noValue = noValueT{}

// stack is template.yaml evaluated for one set of parameter values.
type stack struct {
	raw    map[string]any
	params map[string]any
	conds  map[string]bool
	// Eval is the evaluated template, Typed the same decoded by goformation.
	Eval  map[string]any
	Typed *cloudformation.Template
	// Logging is CallbackFunction's LoggingConfig.
	Logging lambda.Function_LoggingConfig
}

func readTemplate(t *testing.T) map[string]any {
	t.Helper()
	src, err := os.ReadFile(templatePath)
	if err != nil {
		t.Fatal(err)
	}
	long, err := intrinsics.ProcessYAML(src, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		t.Fatalf("goformation cannot read template.yaml: %v", err)
	}
	var raw map[string]any
	if err := json.Unmarshal(long, &raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

// deploy evaluates template.yaml with the parameter values in overrides
// (the defaults for the others), as CloudFormation would at deploy time.
func deploy(t *testing.T, overrides map[string]string) *stack {
	t.Helper()
	s := &stack{raw: readTemplate(t), params: map[string]any{}, conds: map[string]bool{}}
	params, _ := s.raw["Parameters"].(map[string]any)
	for name := range overrides {
		if _, ok := params[name]; !ok {
			t.Fatalf("no parameter %s", name)
		}
	}
	for name, p := range params {
		p := p.(map[string]any)
		v, ok := overrides[name]
		if !ok {
			def, has := p["Default"]
			if !has {
				t.Fatalf("parameter %s has no default: a first deploy would have to invent one", name)
			}
			v = scalar(def)
		}
		if err := checkParameter(p, v); err != nil {
			t.Fatalf("parameter %s=%q: %v", name, v, err)
		}
		if p["Type"] == "Number" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("parameter %s: %v", name, err)
			}
			s.params[name] = f
		} else {
			s.params[name] = v
		}
	}
	res := s.raw["Resources"].(map[string]any)
	out := map[string]any{}
	for k, v := range s.raw {
		if k != "Resources" && k != "Conditions" && k != "Outputs" {
			out[k] = v
		}
	}
	evRes := map[string]any{}
	for name, r := range res {
		r := r.(map[string]any)
		if c, ok := r["Condition"].(string); ok && !s.cond(t, c) {
			continue
		}
		er := map[string]any{}
		for k, v := range r {
			if k == "Properties" {
				er[k] = s.eval(t, v)
			} else if k != "Condition" {
				er[k] = v
			}
		}
		evRes[name] = er
	}
	out["Resources"] = evRes
	if o, ok := s.raw["Outputs"]; ok {
		out["Outputs"] = s.eval(t, o)
	}
	s.Eval = out

	// goformation's typed decode, with LoggingConfig taken aside (see the
	// comment at the top).
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var forTyped map[string]any
	_ = json.Unmarshal(b, &forTyped)
	fn := forTyped["Resources"].(map[string]any)["CallbackFunction"].(map[string]any)["Properties"].(map[string]any)
	lc, err := json.Marshal(fn["LoggingConfig"])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(lc, &s.Logging); err != nil {
		t.Fatalf("LoggingConfig: %v", err)
	}
	delete(fn, "LoggingConfig")
	b, _ = json.Marshal(forTyped)
	s.Typed = &cloudformation.Template{}
	if err := json.Unmarshal(b, s.Typed); err != nil {
		t.Fatalf("goformation refuses the evaluated template: %v", err)
	}
	return s
}

func scalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// checkParameter applies the constraints CloudFormation applies to a value.
func checkParameter(p map[string]any, v string) error {
	if av, ok := p["AllowedValues"].([]any); ok {
		found := false
		for _, a := range av {
			found = found || scalar(a) == v
		}
		if !found {
			return fmt.Errorf("not among AllowedValues %v", av)
		}
	}
	if pat, ok := p["AllowedPattern"].(string); ok && !regexp.MustCompile(pat).MatchString(v) {
		return fmt.Errorf("does not match AllowedPattern %s", pat)
	}
	if p["Type"] == "Number" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return err
		}
		if mn, ok := p["MinValue"].(float64); ok && f < mn {
			return fmt.Errorf("below MinValue %v", mn)
		}
		if mx, ok := p["MaxValue"].(float64); ok && f > mx {
			return fmt.Errorf("above MaxValue %v", mx)
		}
	}
	if mn, ok := p["MinLength"].(float64); ok && float64(len(v)) < mn {
		return fmt.Errorf("shorter than MinLength %v", mn)
	}
	return nil
}

func (s *stack) cond(t *testing.T, name string) bool {
	t.Helper()
	if v, ok := s.conds[name]; ok {
		return v
	}
	c, ok := s.raw["Conditions"].(map[string]any)[name]
	if !ok {
		t.Fatalf("no condition %s", name)
	}
	v := s.evalCond(t, c)
	s.conds[name] = v
	return v
}

func (s *stack) evalCond(t *testing.T, n any) bool {
	t.Helper()
	m, ok := n.(map[string]any)
	if !ok || len(m) != 1 {
		t.Fatalf("condition %v is not one function", n)
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Fn::Equals":
			return scalar(s.eval(t, args[0])) == scalar(s.eval(t, args[1]))
		case "Fn::Not":
			return !s.evalCond(t, args[0])
		case "Fn::And", "Fn::Or":
			all, some := true, false
			for _, a := range args {
				v := s.evalCond(t, a)
				all, some = all && v, some || v
			}
			if fn == "Fn::And" {
				return all
			}
			return some
		case "Condition":
			return s.cond(t, arg.(string))
		}
		t.Fatalf("unsupported condition function %s", fn)
	}
	return false
}

// eval resolves the intrinsic functions in n.
func (s *stack) eval(t *testing.T, n any) any {
	t.Helper()
	switch x := n.(type) {
	case []any:
		out := []any{}
		for _, e := range x {
			if v := s.eval(t, e); v != noValue {
				out = append(out, v)
			}
		}
		return out
	case map[string]any:
		if len(x) == 1 {
			for fn, arg := range x {
				if strings.HasPrefix(fn, "Fn::") || fn == "Ref" {
					return s.intrinsic(t, fn, arg)
				}
			}
		}
		out := map[string]any{}
		for k, v := range x {
			if ev := s.eval(t, v); ev != noValue {
				out[k] = ev
			}
		}
		return out
	}
	return n
}

func (s *stack) resource(name string) bool {
	_, ok := s.raw["Resources"].(map[string]any)[name]
	return ok
}

func (s *stack) ref(t *testing.T, name string) any {
	t.Helper()
	if name == "AWS::NoValue" {
		return noValue
	}
	if v, ok := pseudo[name]; ok {
		return v
	}
	if v, ok := s.params[name]; ok {
		return v
	}
	if s.resource(name) {
		return "ref:" + name
	}
	t.Fatalf("Ref to %s, which is neither a parameter nor a resource", name)
	return nil
}

func (s *stack) getAtt(t *testing.T, res, attr string) string {
	t.Helper()
	if !s.resource(res) {
		t.Fatalf("Fn::GetAtt of %s, which is not a resource", res)
	}
	return "getatt:" + res + "." + attr
}

var subVar = regexp.MustCompile(`\$\{([^}]+)\}`)

func (s *stack) intrinsic(t *testing.T, fn string, arg any) any {
	t.Helper()
	switch fn {
	case "Ref":
		return s.ref(t, arg.(string))
	case "Fn::GetAtt":
		switch a := arg.(type) {
		case string:
			res, attr, _ := strings.Cut(a, ".")
			return s.getAtt(t, res, attr)
		case []any:
			return s.getAtt(t, a[0].(string), a[1].(string))
		}
	case "Fn::If":
		a := arg.([]any)
		if s.cond(t, a[0].(string)) {
			return s.eval(t, a[1])
		}
		return s.eval(t, a[2])
	case "Fn::Join":
		a := arg.([]any)
		var parts []string
		for _, p := range s.eval(t, a[1]).([]any) {
			parts = append(parts, scalar(p))
		}
		return strings.Join(parts, a[0].(string))
	case "Fn::Sub":
		var str string
		vars := map[string]any{}
		switch a := arg.(type) {
		case string:
			str = a
		case []any:
			str = a[0].(string)
			for k, v := range a[1].(map[string]any) {
				vars[k] = s.eval(t, v)
			}
		}
		return subVar.ReplaceAllStringFunc(str, func(m string) string {
			name := m[2 : len(m)-1]
			if strings.HasPrefix(name, "!") {
				return "${" + name[1:] + "}"
			}
			if v, ok := vars[name]; ok {
				return scalar(v)
			}
			if res, attr, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
				return s.getAtt(t, res, attr)
			}
			return scalar(s.ref(t, name))
		})
	}
	t.Fatalf("unsupported intrinsic %s", fn)
	return nil
}

// env is CallbackFunction's environment as deployed.
func (s *stack) env(t *testing.T) map[string]string {
	t.Helper()
	fn, err := s.Typed.GetServerlessFunctionWithName("CallbackFunction")
	if err != nil {
		t.Fatal(err)
	}
	if fn.Environment == nil {
		t.Fatal("CallbackFunction has no environment")
	}
	return fn.Environment.Variables
}

const existingSecret = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:my-hook-key-AbCdEf"

func TestTemplateFunction(t *testing.T) {
	s := deploy(t, nil)
	fn, err := s.Typed.GetServerlessFunctionWithName("CallbackFunction")
	if err != nil {
		t.Fatal(err)
	}
	if fn.Runtime == nil || *fn.Runtime != "provided.al2023" {
		t.Errorf("Runtime = %v, want provided.al2023", fn.Runtime)
	}
	if !slices.Equal(fn.Architectures, []string{"arm64"}) {
		t.Errorf("Architectures = %v, want [arm64]", fn.Architectures)
	}
	if fn.Handler == nil || *fn.Handler != "bootstrap" {
		t.Errorf("Handler = %v", fn.Handler)
	}
	if fn.CodeUri == nil || fn.CodeUri.String == nil || *fn.CodeUri.String != "." {
		t.Errorf("CodeUri = %v, want . (the root module)", fn.CodeUri)
	}
	if fn.AWSCloudFormationMetadata["BuildMethod"] != "makefile" {
		t.Errorf("Metadata.BuildMethod = %v, want makefile", fn.AWSCloudFormationMetadata["BuildMethod"])
	}
	// One full vCPU for BCrypt; see the comment in the template.
	if fn.MemorySize == nil || *fn.MemorySize != 1769 {
		t.Errorf("MemorySize = %v, want 1769", fn.MemorySize)
	}
	if fn.Timeout == nil || *fn.Timeout < 3 || *fn.Timeout > 29 {
		t.Errorf("Timeout = %v, want a few seconds under API Gateway's 30 s", fn.Timeout)
	}
	if fn.Role == nil || *fn.Role != "getatt:CallbackRole.Arn" {
		t.Errorf("Role = %v, want the template's own CallbackRole", fn.Role)
	}
	if s.Logging.LogFormat == nil || *s.Logging.LogFormat != "JSON" {
		t.Errorf("LogFormat = %v, want JSON", s.Logging.LogFormat)
	}
	if s.Logging.LogGroup == nil || *s.Logging.LogGroup != "ref:CallbackLogGroup" {
		t.Errorf("LogGroup = %v, want the template's log group", s.Logging.LogGroup)
	}
	if s.Logging.ApplicationLogLevel == nil || !slices.Contains([]string{"DEBUG", "INFO", "TRACE"}, *s.Logging.ApplicationLogLevel) {
		t.Errorf("ApplicationLogLevel = %v: above INFO, Lambda drops the EMF lines", s.Logging.ApplicationLogLevel)
	}
	if fn.ReservedConcurrentExecutions != nil {
		t.Errorf("ReservedConcurrentExecutions = %d by default, want none", *fn.ReservedConcurrentExecutions)
	}
	routes := map[string]bool{}
	for name, ev := range fn.Events {
		if ev.Type != "HttpApi" || ev.Properties == nil || ev.Properties.HttpApiEvent == nil {
			t.Errorf("event %s is not an HttpApi event", name)
			continue
		}
		h := ev.Properties.HttpApiEvent
		if h.ApiId == nil || *h.ApiId != "ref:HttpApi" {
			t.Errorf("event %s is not on the template's HttpApi", name)
		}
		if h.PayloadFormatVersion == nil || *h.PayloadFormatVersion != "2.0" {
			t.Errorf("event %s payload format %v, want 2.0", name, h.PayloadFormatVersion)
		}
		routes[strings.ToUpper(*h.Method)+" "+*h.Path] = true
	}
	if !maps.Equal(routes, map[string]bool{"POST /callback": true, "GET /functions": true}) {
		t.Errorf("routes = %v, want POST /callback and GET /functions", routes)
	}
	lg, err := s.Typed.GetLogsLogGroupWithName("CallbackLogGroup")
	if err != nil || lg.RetentionInDays == nil || *lg.RetentionInDays != 30 {
		t.Errorf("log group retention = %v (%v), want the parameter's 30 days", lg, err)
	}

	s = deploy(t, map[string]string{"ReservedConcurrency": "20", "LogRetentionDays": "7"})
	fn, _ = s.Typed.GetServerlessFunctionWithName("CallbackFunction")
	if fn.ReservedConcurrentExecutions == nil || *fn.ReservedConcurrentExecutions != 20 {
		t.Errorf("ReservedConcurrency=20 gives %v", fn.ReservedConcurrentExecutions)
	}
	lg, _ = s.Typed.GetLogsLogGroupWithName("CallbackLogGroup")
	if *lg.RetentionInDays != 7 {
		t.Errorf("LogRetentionDays=7 gives %d", *lg.RetentionInDays)
	}
}

func TestTemplateEnvironmentIsTheConfiguration(t *testing.T) {
	s := deploy(t, map[string]string{"NonceMaxCost": "12", "Retention": "48h", "KeyPolicy": "create_ticket=request"})
	env := s.env(t)
	want := map[string]string{
		config.EnvTable:         "ref:Table",
		config.EnvHookKeySecret: "ref:HookKeySecret",
		config.EnvNonceMaxCost:  "12",
		config.EnvRetention:     "48h",
		config.EnvKeyPolicy:     "create_ticket=request",
		config.EnvMetrics:       "true",
		config.EnvMetricsNS:     "oncecall",
		// Declared empty so that `sam local invoke --env-vars` may set them.
		config.EnvHookKey:  "",
		config.EnvEndpoint: "",
	}
	if !maps.Equal(env, want) {
		t.Errorf("environment =\n%v\nwant\n%v", env, want)
	}
	// What the function then loads: the deployed environment, with the
	// references CloudFormation fills in.
	get := func(k string) string {
		return strings.NewReplacer("ref:Table", "oncecall-Table-ABC", "ref:HookKeySecret", existingSecret).Replace(env[k])
	}
	c, err := config.Load(get, config.Lambda, app.FunctionNames())
	if err != nil {
		t.Fatalf("the deployed environment does not load: %v", err)
	}
	if c.HookKey != "" || c.HookKeySecretARN != existingSecret || c.NonceMaxCost != 12 || !c.Metrics {
		t.Errorf("loaded %+v", c)
	}
	// Every value each parameter allows loads too.
	raw := readTemplate(t)
	for _, name := range []string{"NonceMaxCost", "LogLevel"} {
		for _, v := range raw["Parameters"].(map[string]any)[name].(map[string]any)["AllowedValues"].([]any) {
			s := deploy(t, map[string]string{name: scalar(v)})
			env := s.env(t)
			env[config.EnvTable], env[config.EnvHookKeySecret] = "oncecall-Table-ABC", existingSecret
			if _, err := config.Load(func(k string) string { return env[k] }, config.Lambda, app.FunctionNames()); err != nil {
				t.Errorf("%s=%v: %v", name, v, err)
			}
		}
	}
	for _, r := range []string{"1m", "90m", "8760h"} {
		env := deploy(t, map[string]string{"Retention": r}).env(t)
		env[config.EnvTable], env[config.EnvHookKeySecret] = "oncecall-Table-ABC", existingSecret
		if _, err := config.Load(func(k string) string { return env[k] }, config.Lambda, app.FunctionNames()); err != nil {
			t.Errorf("Retention=%s: %v", r, err)
		}
	}
}

func TestTemplateTable(t *testing.T) {
	s := deploy(t, nil)
	tb, err := s.Typed.GetDynamoDBTableWithName("Table")
	if err != nil {
		t.Fatal(err)
	}
	code := dynamo.CreateTableInput("x")
	if tb.BillingMode == nil || *tb.BillingMode != string(code.BillingMode) {
		t.Errorf("BillingMode = %v, want %s", tb.BillingMode, code.BillingMode)
	}
	var keys, codeKeys, attrs, codeAttrs []string
	for _, k := range tb.KeySchema {
		keys = append(keys, k.AttributeName+":"+k.KeyType)
	}
	for _, k := range code.KeySchema {
		codeKeys = append(codeKeys, *k.AttributeName+":"+string(k.KeyType))
	}
	for _, a := range tb.AttributeDefinitions {
		attrs = append(attrs, a.AttributeName+":"+a.AttributeType)
	}
	for _, a := range code.AttributeDefinitions {
		codeAttrs = append(codeAttrs, *a.AttributeName+":"+string(a.AttributeType))
	}
	if !slices.Equal(keys, codeKeys) || !slices.Equal(attrs, codeAttrs) {
		t.Errorf("key schema %v %v, want the code's %v %v (dynamo.CreateTableInput)", keys, attrs, codeKeys, codeAttrs)
	}
	if tb.TimeToLiveSpecification == nil || tb.TimeToLiveSpecification.AttributeName == nil ||
		*tb.TimeToLiveSpecification.AttributeName != dynamo.TTLAttribute || !tb.TimeToLiveSpecification.Enabled {
		t.Errorf("TTL = %+v, want enabled on %q (dynamo.TTLAttribute)", tb.TimeToLiveSpecification, dynamo.TTLAttribute)
	}
	if tb.PointInTimeRecoverySpecification == nil || tb.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled == nil ||
		!*tb.PointInTimeRecoverySpecification.PointInTimeRecoveryEnabled {
		t.Error("point-in-time recovery is off")
	}
	if tb.SSESpecification == nil || !tb.SSESpecification.SSEEnabled {
		t.Error("server-side encryption with KMS is off")
	}
	if tb.DeletionProtectionEnabled == nil || !*tb.DeletionProtectionEnabled {
		t.Error("deletion protection is off by default")
	}
	var gsis, codeGSIs []string
	for _, g := range tb.GlobalSecondaryIndexes {
		var ks []string
		for _, k := range g.KeySchema {
			ks = append(ks, k.AttributeName+":"+k.KeyType)
		}
		gsis = append(gsis, fmt.Sprintf("%s %v %s %v", g.IndexName, ks, *g.Projection.ProjectionType, g.Projection.NonKeyAttributes))
	}
	for _, g := range code.GlobalSecondaryIndexes {
		var ks []string
		for _, k := range g.KeySchema {
			ks = append(ks, *k.AttributeName+":"+string(k.KeyType))
		}
		codeGSIs = append(codeGSIs, fmt.Sprintf("%s %v %s %v", *g.IndexName, ks, g.Projection.ProjectionType, g.Projection.NonKeyAttributes))
	}
	slices.Sort(gsis)
	slices.Sort(codeGSIs)
	if len(codeGSIs) == 0 || !slices.Equal(gsis, codeGSIs) {
		t.Errorf("global secondary indexes\n%v\nwant the code's (dynamo.CreateTableInput)\n%v", gsis, codeGSIs)
	}
	for _, g := range tb.GlobalSecondaryIndexes {
		if g.ProvisionedThroughput != nil {
			t.Errorf("index %s has provisioned throughput on an on-demand table", g.IndexName)
		}
	}
	if tb.LocalSecondaryIndexes != nil || tb.StreamSpecification != nil {
		t.Error("the table has local indexes or a stream the code does not use")
	}
	tb, _ = deploy(t, map[string]string{"DeletionProtection": "false"}).Typed.GetDynamoDBTableWithName("Table")
	if tb.DeletionProtectionEnabled == nil || *tb.DeletionProtectionEnabled {
		t.Error("DeletionProtection=false leaves it on")
	}
}

// TestTemplateOutputs checks the URLs to register in AIVAX and the names
// the README's steps need.
func TestTemplateOutputs(t *testing.T) {
	s := deploy(t, nil)
	want := map[string]string{
		"CallbackUrl":       "https://ref:HttpApi.execute-api.eu-west-1.amazonaws.com/callback",
		"FunctionSourceUrl": "https://ref:HttpApi.execute-api.eu-west-1.amazonaws.com/functions",
		"TableName":         "ref:Table",
		"HookKeySecretArn":  "ref:HookKeySecret",
	}
	for name, v := range want {
		o, ok := s.Typed.Outputs[name]
		if !ok || o.Value != v {
			t.Errorf("output %s = %v, want %s", name, o.Value, v)
		}
	}
}

// statements returns every statement of every policy of role.
func statements(t *testing.T, s *stack, role string) []map[string]any {
	t.Helper()
	r, err := s.Typed.GetIAMRoleWithName(role)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ManagedPolicyArns) > 0 {
		t.Errorf("%s attaches managed policies %v, whose permissions this test cannot see", role, r.ManagedPolicyArns)
	}
	var out []map[string]any
	for _, p := range r.Policies {
		doc := p.PolicyDocument.(map[string]any)
		for _, st := range doc["Statement"].([]any) {
			out = append(out, st.(map[string]any))
		}
	}
	return out
}

func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, scalar(e))
		}
		return out
	}
	return nil
}

// allowed maps every action the role allows to the resources it allows it
// on, and fails on anything a least-privilege role must not have.
func allowed(t *testing.T, s *stack) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, st := range statements(t, s, "CallbackRole") {
		if st["Effect"] != "Allow" {
			continue
		}
		for _, k := range []string{"NotAction", "NotResource"} {
			if _, ok := st[k]; ok {
				t.Errorf("a statement uses %s, which allows everything else", k)
			}
		}
		actions, resources := strs(st["Action"]), strs(st["Resource"])
		if len(actions) == 0 || len(resources) == 0 {
			t.Errorf("statement %v has no action or no resource", st)
		}
		for _, a := range actions {
			if strings.ContainsAny(a, "*?") {
				t.Errorf("wildcard action %q", a)
			}
			for _, r := range resources {
				// Resources are references to this stack's resources; the
				// one place a "*" appears is inside the log group's own Arn
				// attribute (its log streams), never written here.
				if strings.ContainsAny(r, "*?") {
					t.Errorf("wildcard resource %q for %s", r, a)
				}
				out[a] = append(out[a], r)
			}
		}
	}
	return out
}

// dynamoActions is what the code's store calls need in IAM terms
// (dynamo.API): a transaction needs the action of each kind of item in it.
var dynamoActions = map[string][]string{
	"TransactWriteItems": {"dynamodb:ConditionCheckItem", "dynamodb:PutItem"}, // ConditionCheck + 2 Put
	"TransactGetItems":   {"dynamodb:GetItem"},
	"GetItem":            {"dynamodb:GetItem"},
	"PutItem":            {"dynamodb:PutItem"}, // admin tools; the transaction's Puts need it anyway
}

func TestTemplateLeastPrivilege(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		secret    string
	}{
		{"created secret", nil, "ref:HookKeySecret"},
		{"existing secret", map[string]string{"HookKeySecretArn": existingSecret}, existingSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := deploy(t, tc.overrides)
			got := allowed(t, s)
			var wantActions []string
			for _, as := range dynamoActions {
				wantActions = append(wantActions, as...)
			}
			wantActions = append(wantActions, "secretsmanager:GetSecretValue", "logs:CreateLogStream", "logs:PutLogEvents")
			slices.Sort(wantActions)
			wantActions = slices.Compact(wantActions)
			gotActions := slices.Sorted(maps.Keys(got))
			if !slices.Equal(gotActions, wantActions) {
				t.Errorf("allowed actions\n%v\nwant exactly\n%v", gotActions, wantActions)
			}
			for a, rs := range got {
				var want []string
				switch strings.SplitN(a, ":", 2)[0] {
				case "dynamodb":
					want = []string{"getatt:Table.Arn"}
				case "secretsmanager":
					want = []string{tc.secret}
				case "logs":
					want = []string{"getatt:CallbackLogGroup.Arn"}
				}
				if !slices.Equal(rs, want) {
					t.Errorf("%s on %v, want only %v", a, rs, want)
				}
			}
			// The function reads the same secret it may read.
			if env := s.env(t); env[config.EnvHookKeySecret] != tc.secret {
				t.Errorf("%s = %q, but the role allows %q", config.EnvHookKeySecret, env[config.EnvHookKeySecret], tc.secret)
			}
			_, created := s.Typed.Resources["HookKeySecret"]
			if created != (tc.secret == "ref:HookKeySecret") {
				t.Errorf("HookKeySecret created = %v with %s", created, tc.name)
			}
		})
	}
}

// TestTemplateCoversTheStoreAPI keeps dynamoActions honest: a method added
// to dynamo.API must say what it needs in IAM.
func TestTemplateCoversTheStoreAPI(t *testing.T) {
	methods := apiMethods()
	sort.Strings(methods)
	if !slices.Equal(methods, slices.Sorted(maps.Keys(dynamoActions))) {
		t.Errorf("dynamo.API has %v; dynamoActions maps %v", methods, slices.Sorted(maps.Keys(dynamoActions)))
	}
}

func TestTemplateHookKeySecret(t *testing.T) {
	s := deploy(t, nil)
	sec, err := s.Typed.GetSecretsManagerSecretWithName("HookKeySecret")
	if err != nil {
		t.Fatal(err)
	}
	g := sec.GenerateSecretString
	if g == nil || g.GenerateStringKey == nil || *g.GenerateStringKey != "current" || g.SecretStringTemplate == nil || *g.SecretStringTemplate != "{}" {
		t.Fatalf("GenerateSecretString = %+v, want {\"current\": <random>}, the form internal/secret reads", g)
	}
	if g.PasswordLength == nil || *g.PasswordLength < 32 || *g.PasswordLength > 72 {
		t.Errorf("PasswordLength = %v: at least 32, at most the 72 bytes BCrypt reads", g.PasswordLength)
	}
	if sec.SecretString != nil {
		t.Error("the template holds a secret value")
	}
}

func TestTemplateMetricsAndAlarms(t *testing.T) {
	s := deploy(t, nil)
	// The busy-rate alarm reads the metrics the function writes.
	busy, err := s.Typed.GetCloudWatchAlarmWithName("BusyRateAlarm")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range busy.Metrics {
		if m.MetricStat == nil {
			continue
		}
		ms := m.MetricStat.Metric
		if ms.Namespace == nil || *ms.Namespace != "oncecall" || ms.Dimensions[0].Name != metrics.Dimension || ms.Dimensions[0].Value != "ref:CallbackFunction" {
			t.Errorf("alarm metric %v is not the function's EMF metric", ms)
		}
		names[*ms.MetricName] = true
	}
	if !names[protocol.StatusBusy] || !names[metrics.Calls] {
		t.Errorf("busy alarm reads %v, want %s and %s", names, protocol.StatusBusy, metrics.Calls)
	}
	a5, err := s.Typed.GetCloudWatchAlarmWithName("Api5xxAlarm")
	if err != nil {
		t.Fatal(err)
	}
	if *a5.Namespace != "AWS/ApiGateway" || *a5.MetricName != "5xx" || a5.Dimensions[0].Value != "ref:HttpApi" {
		t.Errorf("5xx alarm watches %v %v %v", *a5.Namespace, *a5.MetricName, a5.Dimensions)
	}
	if a5.AlarmActions != nil {
		t.Error("alarm actions without AlarmTopicArn")
	}
	a5, _ = deploy(t, map[string]string{"AlarmTopicArn": "arn:aws:sns:eu-west-1:123456789012:ops"}).Typed.GetCloudWatchAlarmWithName("Api5xxAlarm")
	if !slices.Equal(a5.AlarmActions, []string{"arn:aws:sns:eu-west-1:123456789012:ops"}) {
		t.Errorf("AlarmActions = %v", a5.AlarmActions)
	}

	// The dashboard is valid JSON and plots every outcome the code counts.
	d, err := s.Typed.GetCloudWatchDashboardWithName("Dashboard")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Widgets []struct {
			Properties struct {
				Metrics []json.RawMessage `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	if err := json.Unmarshal([]byte(d.DashboardBody), &body); err != nil {
		t.Fatalf("dashboard body is not JSON: %v\n%s", err, d.DashboardBody)
	}
	plotted := map[string]bool{}
	for _, w := range body.Widgets {
		for _, m := range w.Properties.Metrics {
			var row []any
			_ = json.Unmarshal(m, &row)
			for _, e := range row {
				if s, ok := e.(string); ok {
					plotted[s] = true
				}
			}
		}
	}
	for _, o := range append(slices.Clone(callback.Outcomes), metrics.Latency, metrics.Calls, "ref:CallbackFunction", "ref:HttpApi", "ref:Table") {
		if !plotted[o] {
			t.Errorf("the dashboard does not plot %s", o)
		}
	}
}

func TestTemplateParameterDefaultsAreValid(t *testing.T) {
	// deploy checks every parameter value against its constraints; with no
	// overrides those are the defaults a first deploy uses.
	deploy(t, nil)
	raw := readTemplate(t)
	for name, p := range raw["Parameters"].(map[string]any) {
		if _, ok := p.(map[string]any)["Description"]; !ok {
			t.Errorf("parameter %s has no description for sam deploy --guided", name)
		}
	}
}

// apiMethods lists dynamo.API's methods.
func apiMethods() []string {
	typ := reflect.TypeFor[dynamo.API]()
	out := make([]string, typ.NumMethod())
	for i := range out {
		out[i] = typ.Method(i).Name
	}
	return out
}

// statefulTypes are the resource types whose deletion or replacement
// throws data away (from cfn-lint's I3011 list, those a template like this
// one could use).
var statefulTypes = []string{
	"AWS::DynamoDB::Table", "AWS::DynamoDB::GlobalTable", "AWS::Logs::LogGroup", "AWS::SecretsManager::Secret",
	"AWS::S3::Bucket", "AWS::SQS::Queue", "AWS::KMS::Key", "AWS::Kinesis::Stream", "AWS::EFS::FileSystem",
	"AWS::RDS::DBInstance", "AWS::RDS::DBCluster", "AWS::Cognito::UserPool", "AWS::Backup::BackupVault",
}

// TestTemplateStatefulResourcesChooseTheirFate checks that every resource
// holding state says what a stack deletion and a replacement do to it,
// rather than leave CloudFormation's default (delete) to chance: the
// tickets' table is kept either way, the logs go with the stack, and the
// hook-key secret goes with the stack but survives a replacement, whose new
// random key AIVAX would not know.
func TestTemplateStatefulResourcesChooseTheirFate(t *testing.T) {
	want := map[string]struct{ deletion, replace string }{
		"Table":            {"Retain", "Retain"},
		"CallbackLogGroup": {"Delete", "Delete"},
		"HookKeySecret":    {"Delete", "Retain"},
	}
	res, _ := readTemplate(t)["Resources"].(map[string]any)
	for name := range want {
		if _, ok := res[name]; !ok {
			t.Errorf("no resource %s", name)
		}
	}
	for name, r := range res {
		r, _ := r.(map[string]any)
		typ, _ := r["Type"].(string)
		if !slices.Contains(statefulTypes, typ) {
			continue
		}
		deletion, _ := r["DeletionPolicy"].(string)
		replace, _ := r["UpdateReplacePolicy"].(string)
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("%s (%s) holds state: choose its DeletionPolicy and UpdateReplacePolicy, say why in template.yaml, and add it here", name, typ)
		case deletion != w.deletion || replace != w.replace:
			t.Errorf("%s: DeletionPolicy %q, UpdateReplacePolicy %q; want %q and %q", name, deletion, replace, w.deletion, w.replace)
		}
	}
}
