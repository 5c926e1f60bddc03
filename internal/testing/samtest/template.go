package samtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/awslabs/goformation/v7/cloudformation"
	"github.com/awslabs/goformation/v7/cloudformation/lambda"
	"github.com/awslabs/goformation/v7/intrinsics"
)

// Pseudo are the pseudo parameter values templates are evaluated with.
var Pseudo = map[string]string{
	"AWS::Region": "eu-west-1", "AWS::AccountId": "123456789012", "AWS::StackName": "oncecall",
	"AWS::Partition": "aws", "AWS::URLSuffix": "amazonaws.com",
}

// noValueT stands for AWS::NoValue until its property is dropped.
type noValueT struct{}

var noValue = noValueT{}

// Stack is a template evaluated for one set of parameter values.
type Stack struct {
	// Raw is the template as read, intrinsics in their long form.
	Raw    map[string]any
	Params map[string]any
	conds  map[string]bool
	// Eval is the evaluated template: the resources whose condition
	// holds, their properties with every intrinsic resolved, the outputs
	// whose condition holds. Typed is the same decoded by goformation.
	Eval  map[string]any
	Typed *cloudformation.Template
	// Logging holds each serverless function's LoggingConfig, which
	// goformation's model of AWS::Serverless::Function lacks.
	Logging map[string]lambda.Function_LoggingConfig

	t testing.TB
}

// Read reads the template at path with intrinsics in their long form.
// Each call returns a copy of its own.
func Read(t testing.TB, path string) map[string]any {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// Converting the YAML is most of an evaluation's time: the long form
	// of each version of a file read is kept.
	key := path + "\x00" + string(src)
	long, ok := longForms.Load(key)
	if !ok {
		b, err := intrinsics.ProcessYAML(src, &intrinsics.ProcessorOptions{NoProcess: true})
		if err != nil {
			t.Fatalf("goformation cannot read %s: %v", path, err)
		}
		long, _ = longForms.LoadOrStore(key, b)
	}
	var raw map[string]any
	if err := json.Unmarshal(long.([]byte), &raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

var (
	longForms sync.Map // path + NUL + source -> long form JSON
	patterns  sync.Map // AllowedPattern -> *regexp.Regexp
)

// Deploy evaluates the template at path with the parameter values in
// overrides (the defaults for the others), as CloudFormation would at
// deploy time. A value its parameter's constraints refuse, or a Rule whose
// assertion fails, fails the test: use Refusal to expect one.
func Deploy(t testing.TB, path string, overrides map[string]string) *Stack {
	t.Helper()
	s, err := evaluate(t, path, overrides)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Refusal evaluates like Deploy and returns why CloudFormation would refuse
// the parameter values (a constraint or a Rule), or nil when it would
// deploy them.
func Refusal(t testing.TB, path string, overrides map[string]string) error {
	t.Helper()
	_, err := evaluate(t, path, overrides)
	return err
}

func evaluate(t testing.TB, path string, overrides map[string]string) (*Stack, error) {
	t.Helper()
	s := &Stack{Raw: Read(t, path), Params: map[string]any{}, conds: map[string]bool{}, Logging: map[string]lambda.Function_LoggingConfig{}, t: t}
	params, _ := s.Raw["Parameters"].(map[string]any)
	for name := range overrides {
		if _, ok := params[name]; !ok {
			t.Fatalf("no parameter %s", name)
		}
	}
	var refused []error
	for name, p := range params {
		p := p.(map[string]any)
		v, ok := overrides[name]
		if !ok {
			def, has := p["Default"]
			if !has {
				t.Fatalf("parameter %s has no default: a first deploy would have to invent one", name)
			}
			v = Scalar(def)
		}
		if err := CheckParameter(p, v); err != nil {
			refused = append(refused, fmt.Errorf("parameter %s=%q: %w", name, v, err))
			continue
		}
		if p["Type"] == "Number" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("parameter %s: %v", name, err)
			}
			s.Params[name] = f
		} else {
			s.Params[name] = v
		}
	}
	if len(refused) > 0 {
		return nil, errors.Join(refused...)
	}
	if err := s.rules(); err != nil {
		return nil, err
	}
	res := s.Raw["Resources"].(map[string]any)
	out := map[string]any{}
	for k, v := range s.Raw {
		switch k {
		case "Resources", "Conditions", "Outputs", "Rules":
		default:
			out[k] = v
		}
	}
	evRes := map[string]any{}
	for name, r := range res {
		r := r.(map[string]any)
		if c, ok := r["Condition"].(string); ok && !s.Cond(c) {
			continue
		}
		er := map[string]any{}
		for k, v := range r {
			if k == "Properties" {
				er[k] = s.eval(v)
			} else if k != "Condition" {
				er[k] = v
			}
		}
		evRes[name] = er
	}
	out["Resources"] = evRes
	if o, ok := s.Raw["Outputs"].(map[string]any); ok {
		evOut := map[string]any{}
		for name, v := range o {
			v := v.(map[string]any)
			if c, ok := v["Condition"].(string); ok && !s.Cond(c) {
				continue
			}
			ev := map[string]any{}
			for k, e := range v {
				if k != "Condition" {
					ev[k] = s.eval(e)
				}
			}
			evOut[name] = ev
		}
		out["Outputs"] = evOut
	}
	s.Eval = out

	// goformation's typed decode, with each function's LoggingConfig taken
	// aside (see the package comment), and left out an HTTP API's
	// AccessLogSettings and Auth.EnableIamAuthorizer and a CloudFront
	// origin's OriginMtlsConfig, which
	// goformation's model predates (both read from Eval).
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var forTyped map[string]any
	_ = json.Unmarshal(b, &forTyped)
	for name, r := range forTyped["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == "AWS::Serverless::HttpApi" {
			// SAM's AccessLogSettings, which goformation's model names
			// AccessLogSetting: read from Eval (Properties).
			if props, ok := r["Properties"].(map[string]any); ok {
				delete(props, "AccessLogSettings")
				// Auth.EnableIamAuthorizer (GET /outcome's AWS_IAM),
				// which goformation's model predates: read from Eval.
				if auth, ok := props["Auth"].(map[string]any); ok {
					delete(auth, "EnableIamAuthorizer")
					if len(auth) == 0 {
						delete(props, "Auth")
					}
				}
			}
			continue
		}
		if r["Type"] == "AWS::CloudFront::Distribution" {
			dropOriginMtls(r)
			continue
		}
		if r["Type"] != "AWS::Serverless::Function" {
			continue
		}
		props, _ := r["Properties"].(map[string]any)
		lc, ok := props["LoggingConfig"]
		if !ok {
			continue
		}
		raw, _ := json.Marshal(lc)
		var c lambda.Function_LoggingConfig
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatalf("%s LoggingConfig: %v", name, err)
		}
		s.Logging[name] = c
		delete(props, "LoggingConfig")
	}
	b, _ = json.Marshal(forTyped)
	s.Typed = &cloudformation.Template{}
	if err := json.Unmarshal(b, s.Typed); err != nil {
		t.Fatalf("goformation refuses the evaluated template: %v", err)
	}
	return s, nil
}

// dropOriginMtls deletes OriginMtlsConfig from each custom origin of the
// distribution resource r.
func dropOriginMtls(r map[string]any) {
	props, _ := r["Properties"].(map[string]any)
	dc, _ := props["DistributionConfig"].(map[string]any)
	origins, _ := dc["Origins"].([]any)
	for _, o := range origins {
		o, _ := o.(map[string]any)
		if c, ok := o["CustomOriginConfig"].(map[string]any); ok {
			delete(c, "OriginMtlsConfig")
		}
	}
}

// Scalar is a parameter value or a scalar of a template as CloudFormation
// reads it: a string.
func Scalar(v any) string {
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

// CheckParameter applies the constraints CloudFormation applies to a value
// of parameter p.
func CheckParameter(p map[string]any, v string) error {
	if av, ok := p["AllowedValues"].([]any); ok {
		found := false
		for _, a := range av {
			found = found || Scalar(a) == v
		}
		if !found {
			return fmt.Errorf("not among AllowedValues %v", av)
		}
	}
	if pat, ok := p["AllowedPattern"].(string); ok && !pattern(pat).MatchString(v) {
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
	if mx, ok := p["MaxLength"].(float64); ok && float64(len(v)) > mx {
		return fmt.Errorf("longer than MaxLength %v", mx)
	}
	return nil
}

func pattern(p string) *regexp.Regexp {
	if re, ok := patterns.Load(p); ok {
		return re.(*regexp.Regexp)
	}
	re, _ := patterns.LoadOrStore(p, regexp.MustCompile(p))
	return re.(*regexp.Regexp)
}

// rules applies the template's Rules: each assertion of a rule whose
// condition holds must hold.
func (s *Stack) rules() error {
	rules, _ := s.Raw["Rules"].(map[string]any)
	var failed []error
	for name, r := range rules {
		r := r.(map[string]any)
		if c, ok := r["RuleCondition"]; ok && !s.evalCond(c) {
			continue
		}
		as, _ := r["Assertions"].([]any)
		if len(as) == 0 {
			s.t.Fatalf("rule %s has no assertions", name)
		}
		for _, a := range as {
			a := a.(map[string]any)
			if !s.evalCond(a["Assert"]) {
				failed = append(failed, fmt.Errorf("rule %s: %v", name, a["AssertDescription"]))
			}
		}
	}
	return errors.Join(failed...)
}

// Cond evaluates the template's condition name.
func (s *Stack) Cond(name string) bool {
	s.t.Helper()
	if v, ok := s.conds[name]; ok {
		return v
	}
	c, ok := s.Raw["Conditions"].(map[string]any)[name]
	if !ok {
		s.t.Fatalf("no condition %s", name)
	}
	v := s.evalCond(c)
	s.conds[name] = v
	return v
}

func (s *Stack) evalCond(n any) bool {
	s.t.Helper()
	m, ok := n.(map[string]any)
	if !ok || len(m) != 1 {
		s.t.Fatalf("condition %v is not one function", n)
	}
	for fn, arg := range m {
		args, _ := arg.([]any)
		switch fn {
		case "Fn::Equals":
			return Scalar(s.eval(args[0])) == Scalar(s.eval(args[1]))
		case "Fn::Not":
			return !s.evalCond(args[0])
		case "Fn::And", "Fn::Or":
			all, some := true, false
			for _, a := range args {
				v := s.evalCond(a)
				all, some = all && v, some || v
			}
			if fn == "Fn::And" {
				return all
			}
			return some
		case "Fn::Contains":
			// Rules only: a list of strings contains a string.
			v := Scalar(s.eval(args[1]))
			for _, e := range s.eval(args[0]).([]any) {
				if Scalar(e) == v {
					return true
				}
			}
			return false
		case "Condition":
			return s.Cond(arg.(string))
		}
		s.t.Fatalf("unsupported condition function %s", fn)
	}
	return false
}

// eval resolves the intrinsic functions in n.
func (s *Stack) eval(n any) any {
	s.t.Helper()
	switch x := n.(type) {
	case []any:
		out := []any{}
		for _, e := range x {
			if v := s.eval(e); v != noValue {
				out = append(out, v)
			}
		}
		return out
	case map[string]any:
		if len(x) == 1 {
			for fn, arg := range x {
				if strings.HasPrefix(fn, "Fn::") || fn == "Ref" {
					return s.intrinsic(fn, arg)
				}
			}
		}
		out := map[string]any{}
		for k, v := range x {
			if ev := s.eval(v); ev != noValue {
				out[k] = ev
			}
		}
		return out
	}
	return n
}

func (s *Stack) resource(name string) bool {
	_, ok := s.Raw["Resources"].(map[string]any)[name]
	return ok
}

// resourceExists reports whether resource name exists in this stack (its
// condition, if any, holds). A reference to one that does not is an error
// CloudFormation reports at deploy time.
func (s *Stack) resourceExists(name string) bool {
	r, ok := s.Raw["Resources"].(map[string]any)[name].(map[string]any)
	if !ok {
		return false
	}
	c, ok := r["Condition"].(string)
	return !ok || s.Cond(c)
}

func (s *Stack) ref(name string) any {
	s.t.Helper()
	if name == "AWS::NoValue" {
		return noValue
	}
	if v, ok := Pseudo[name]; ok {
		return v
	}
	if v, ok := s.Params[name]; ok {
		return v
	}
	if s.resource(name) {
		if !s.resourceExists(name) {
			s.t.Fatalf("Ref to %s, which this stack does not create (its condition is false)", name)
		}
		return "ref:" + name
	}
	s.t.Fatalf("Ref to %s, which is neither a parameter nor a resource", name)
	return nil
}

func (s *Stack) getAtt(res, attr string) string {
	s.t.Helper()
	if !s.resource(res) {
		s.t.Fatalf("Fn::GetAtt of %s, which is not a resource", res)
	}
	if !s.resourceExists(res) {
		s.t.Fatalf("Fn::GetAtt of %s.%s, which this stack does not create (its condition is false)", res, attr)
	}
	return "getatt:" + res + "." + attr
}

var subVar = regexp.MustCompile(`\$\{([^}]+)\}`)

func (s *Stack) intrinsic(fn string, arg any) any {
	s.t.Helper()
	switch fn {
	case "Ref":
		return s.ref(arg.(string))
	case "Fn::GetAtt":
		switch a := arg.(type) {
		case string:
			res, attr, _ := strings.Cut(a, ".")
			return s.getAtt(res, attr)
		case []any:
			return s.getAtt(a[0].(string), a[1].(string))
		}
	case "Fn::If":
		a := arg.([]any)
		if s.Cond(a[0].(string)) {
			return s.eval(a[1])
		}
		return s.eval(a[2])
	case "Fn::Join":
		a := arg.([]any)
		var parts []string
		for _, p := range s.eval(a[1]).([]any) {
			parts = append(parts, Scalar(p))
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
				vars[k] = s.eval(v)
			}
		}
		return subVar.ReplaceAllStringFunc(str, func(m string) string {
			name := m[2 : len(m)-1]
			if strings.HasPrefix(name, "!") {
				return "${" + name[1:] + "}"
			}
			if v, ok := vars[name]; ok {
				return Scalar(v)
			}
			if res, attr, ok := strings.Cut(name, "."); ok && !strings.HasPrefix(name, "AWS::") {
				return s.getAtt(res, attr)
			}
			return Scalar(s.ref(name))
		})
	}
	s.t.Fatalf("unsupported intrinsic %s", fn)
	return nil
}

// Resource returns the evaluated resource name (Type, Properties and the
// policies), or nil when this stack does not create it.
func (s *Stack) Resource(name string) map[string]any {
	r, _ := s.Eval["Resources"].(map[string]any)[name].(map[string]any)
	return r
}

// Properties returns the evaluated properties of resource name, failing
// the test when this stack does not create it.
func (s *Stack) Properties(name string) map[string]any {
	s.t.Helper()
	r := s.Resource(name)
	if r == nil {
		s.t.Fatalf("no resource %s", name)
	}
	p, _ := r["Properties"].(map[string]any)
	return p
}

// Env is the environment of serverless function fn as deployed.
func (s *Stack) Env(fn string) map[string]string {
	s.t.Helper()
	f, err := s.Typed.GetServerlessFunctionWithName(fn)
	if err != nil {
		s.t.Fatal(err)
	}
	if f.Environment == nil {
		s.t.Fatalf("%s has no environment", fn)
	}
	return f.Environment.Variables
}

// LambdaEnv is what the Lambda service adds to serverless function fn's
// environment as deployed in a test stack: from the function's
// configuration (log format and level, timeout, memory), its name in the
// stack ("oncecall-<fn>-TEST"), the region and temporary credentials
// (which the AWS stand-in accepts unchecked).
func (s *Stack) LambdaEnv(fn string) map[string]string {
	s.t.Helper()
	f, err := s.Typed.GetServerlessFunctionWithName(fn)
	if err != nil {
		s.t.Fatal(err)
	}
	lc, ok := s.Logging[fn]
	if !ok || lc.LogFormat == nil || lc.ApplicationLogLevel == nil || f.Timeout == nil || f.MemorySize == nil {
		s.t.Fatalf("%s has no LogFormat, ApplicationLogLevel, Timeout or MemorySize", fn)
	}
	return map[string]string{
		"AWS_LAMBDA_LOG_FORMAT":           *lc.LogFormat,
		"AWS_LAMBDA_LOG_LEVEL":            *lc.ApplicationLogLevel,
		"AWS_LAMBDA_FUNCTION_NAME":        "oncecall-" + fn + "-TEST",
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     fmt.Sprint(*f.Timeout),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": fmt.Sprint(*f.MemorySize),
		"AWS_REGION":                      "eu-west-1",
		"AWS_DEFAULT_REGION":              "eu-west-1",
		"AWS_ACCESS_KEY_ID":               "ASIAONCECALLTEST0001",
		"AWS_SECRET_ACCESS_KEY":           "test-secret-access-key",
		"AWS_SESSION_TOKEN":               "test-session-token",
	}
}

// Resolve replaces the references in v with the values refs gives them
// (such as "ref:Table" → a table name), failing the test when one is left.
func Resolve(t testing.TB, v string, refs map[string]string) string {
	t.Helper()
	// Longest first, so that "ref:Table" never replaces the start of a
	// longer reference.
	keys := slices.Collect(maps.Keys(refs))
	slices.SortFunc(keys, func(a, b string) int { return len(b) - len(a) })
	for _, k := range keys {
		v = strings.ReplaceAll(v, k, refs[k])
	}
	if strings.Contains(v, "ref:") || strings.Contains(v, "getatt:") {
		t.Fatalf("%s: a reference the test does not fill in", v)
	}
	return v
}
