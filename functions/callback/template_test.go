package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/awslabs/goformation/v7/cloudformation/lambda"

	"github.com/oncecall/oncecall/internal/apigw"
	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/auditkms"
	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/metrics"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/testing/samtest"
)

// How template.yaml is read: internal/testing/samtest evaluates it for a set of
// parameter values as CloudFormation would (constraints, Rules,
// Conditions, intrinsics), keeping references to the stack's own resources
// as "ref:Name" and "getatt:Name.Attr", and goformation decodes the result.
// functions/deliver checks the delivery worker's part of the template.

const templatePath = "../../template.yaml"

// stack is template.yaml as deployed, with CallbackFunction's LoggingConfig
// at hand.
type stack struct {
	*samtest.Stack
	Logging lambda.Function_LoggingConfig
}

// deploy evaluates template.yaml with the parameter values in overrides
// (the defaults for the others), as CloudFormation would at deploy time.
func deploy(t testing.TB, overrides map[string]string) *stack {
	t.Helper()
	s := samtest.Deploy(t, templatePath, overrides)
	return &stack{Stack: s, Logging: s.Logging["CallbackFunction"]}
}

// env is CallbackFunction's environment as deployed.
func (s *stack) env(t testing.TB) map[string]string {
	t.Helper()
	return s.Env("CallbackFunction")
}

// allowed maps every action CallbackRole allows to the resources it allows
// it on (samtest.Allowed fails on wildcards and the like).
func allowed(t testing.TB, s *stack) map[string][]string {
	t.Helper()
	return samtest.Allowed(t, s.Stack, "CallbackRole")
}

func readTemplate(t testing.TB) map[string]any { t.Helper(); return samtest.Read(t, templatePath) }

func scalar(v any) string { return samtest.Scalar(v) }

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
	// The handler's own deadline (callback.Deadline), which bounds how
	// long a call under way when access is taken away may still answer,
	// is the function's timeout: a few seconds under API Gateway's 30 s.
	if fn.Timeout == nil || time.Duration(*fn.Timeout)*time.Second != callback.Deadline || *fn.Timeout < 3 || *fn.Timeout > 29 {
		t.Errorf("Timeout = %v, want callback.Deadline, %v: the bound oncecall-admin names after a revocation", fn.Timeout, callback.Deadline)
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
	// Flood-proof by default: the callback's concurrency is capped.
	if fn.ReservedConcurrentExecutions == nil || *fn.ReservedConcurrentExecutions != 10 {
		t.Errorf("ReservedConcurrentExecutions = %v by default, want 10", fn.ReservedConcurrentExecutions)
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
	if want := map[string]bool{apigw.CallbackRoute: true, apigw.FunctionsRoute: true, apigw.MCPRoute: true}; !maps.Equal(routes, want) {
		t.Errorf("routes = %v, want the ones apigw serves: %v", routes, want)
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

// TestTemplateEdge: Edge=cloudfront puts CloudFront, with an AWS WAF
// rate-based rule per source IP, in front of the API; the API's custom
// domain requires mutual TLS with the client certificate CloudFront
// presents, so that what is sent around the edge is refused in the TLS
// handshake; and the function gets the token the edge adds, so that it
// refuses what comes around the edge with another certificate of that
// CA. WAF for CloudFront exists in us-east-1 only, which a rule enforces.
// By default there is no edge and no token.
func TestTemplateEdge(t *testing.T) {
	s := deploy(t, nil)
	for _, r := range []string{"EdgeDistribution", "EdgeWebAcl", "EdgeOriginSecret"} {
		if _, ok := s.Typed.Resources[r]; ok {
			t.Errorf("%s exists by default", r)
		}
	}
	for _, k := range []string{config.EnvEdgeToken, config.EnvEdgeTokenSecret} {
		if _, ok := s.env(t)[k]; ok {
			t.Errorf("%s is set by default", k)
		}
	}
	if v := s.Properties("HttpApi")["DisableExecuteApiEndpoint"]; v != false {
		t.Errorf("DisableExecuteApiEndpoint = %v without the edge, want false", v)
	}
	edge := edgeParams(nil)
	if err := samtest.Refusal(t, templatePath, edge); err == nil || !strings.Contains(err.Error(), "us-east-1") {
		t.Errorf("Edge=cloudfront outside us-east-1: %v, want refused naming us-east-1", err)
	}

	region := samtest.Pseudo["AWS::Region"]
	samtest.Pseudo["AWS::Region"] = "us-east-1"
	t.Cleanup(func() { samtest.Pseudo["AWS::Region"] = region })
	// CloudFront's default certificate cannot require TLS 1.2: the edge
	// needs a domain and its certificate.
	if err := samtest.Refusal(t, templatePath, map[string]string{"Edge": "cloudfront"}); err == nil || !strings.Contains(err.Error(), "EdgeCertificateArn") {
		t.Errorf("Edge=cloudfront without a domain and certificate: %v, want refused naming EdgeCertificateArn", err)
	}
	// Without mutual TLS on the API's custom domain, a flood sent to its
	// regional endpoint around the edge takes the stage's throttle.
	for _, missing := range []string{"EdgeTruststoreUri", "EdgeClientCertificateArn"} {
		p := edgeParams(nil)
		delete(p, missing)
		if err := samtest.Refusal(t, templatePath, p); err == nil || !strings.Contains(err.Error(), "EdgeTruststoreUri and EdgeClientCertificateArn") {
			t.Errorf("Edge=cloudfront without %s: %v, want refused naming the truststore and the client certificate", missing, err)
		}
	}
	edge["EdgeRateLimit"] = "300"
	s = deploy(t, edge)
	env := s.env(t)
	// The token comes from its secret at cold start, never from the
	// environment whoever reads the function's configuration reads.
	if _, ok := env[config.EnvEdgeToken]; ok || env[config.EnvEdgeTokenSecret] != "ref:EdgeOriginSecret" || env[config.EnvPublicURL] != "https://"+edgeDomain {
		t.Errorf("environment %v: want %s naming the edge's secret, no %s, and PUBLIC_URL the edge's", env, config.EnvEdgeTokenSecret, config.EnvEdgeToken)
	}
	if !samtest.Grants(allowed(t, s))[samtest.Grant{Action: "secretsmanager:GetSecretValue", Resource: "ref:EdgeOriginSecret"}] {
		t.Error("CallbackRole may not read the edge's secret")
	}
	token := "{{resolve:secretsmanager:ref:EdgeOriginSecret:SecretString}}"
	// The execute-api URL answers nothing: the API is reached by its
	// custom domain only, over TLS 1.2, CloudFront's origin.
	if v := s.Properties("HttpApi")["DisableExecuteApiEndpoint"]; v != true {
		t.Errorf("DisableExecuteApiEndpoint = %v with the edge, want true", v)
	}
	dom := s.Properties("EdgeApiDomain")
	if dom["DomainName"] != edgeDomain || fmt.Sprint(dom["DomainNameConfigurations"]) != fmt.Sprint([]any{map[string]any{"CertificateArn": edgeCert, "EndpointType": "REGIONAL", "SecurityPolicy": "TLS_1_2"}}) {
		t.Errorf("the API's custom domain %v: want %s, regional, TLS 1.2, with the certificate", dom, edgeDomain)
	}
	// The regional endpoint completes a TLS handshake only with a client
	// certificate the truststore's CA issued; the truststore's object
	// version is pinned only when one is given.
	if m := fmt.Sprint(dom["MutualTlsAuthentication"]); m != fmt.Sprint(map[string]any{"TruststoreUri": edgeTruststore}) {
		t.Errorf("the API's custom domain's mutual TLS %s: want the truststore %s", m, edgeTruststore)
	}
	if m := fmt.Sprint(deploy(t, edgeParams(map[string]string{"EdgeTruststoreVersion": "v3.Ab_c"})).Properties("EdgeApiDomain")["MutualTlsAuthentication"]); m != fmt.Sprint(map[string]any{"TruststoreUri": edgeTruststore, "TruststoreVersion": "v3.Ab_c"}) {
		t.Errorf("with EdgeTruststoreVersion, mutual TLS %s: want the truststore at that version", m)
	}
	if m := s.Properties("EdgeApiMapping"); m["ApiId"] != "ref:HttpApi" || m["DomainName"] != "ref:EdgeApiDomain" || m["Stage"] != "$default" {
		t.Errorf("API mapping %v: want the HTTP API's $default stage on the custom domain", m)
	}
	for _, o := range []string{"CallbackUrl", "EdgeCallbackUrl"} {
		if v := s.Typed.Outputs[o].Value; v != "https://"+edgeDomain+"/callback" {
			t.Errorf("output %s = %v with the edge, want the edge's URL", o, v)
		}
	}
	dist, err := s.Typed.GetCloudFrontDistributionWithName("EdgeDistribution")
	if err != nil {
		t.Fatal(err)
	}
	dc := dist.DistributionConfig
	if dc.WebACLId == nil || *dc.WebACLId != "getatt:EdgeWebAcl.Arn" {
		t.Errorf("WebACLId = %v, want the stack's web ACL", dc.WebACLId)
	}
	if len(dc.Origins) != 1 || dc.Origins[0].CustomOriginConfig == nil || dc.Origins[0].CustomOriginConfig.OriginProtocolPolicy != "https-only" ||
		dc.Origins[0].DomainName != "getatt:EdgeApiDomain.RegionalDomainName" {
		t.Fatalf("origins %+v: want the HTTP API's custom domain, over HTTPS", dc.Origins)
	}
	if vc := dc.ViewerCertificate; vc == nil || vc.AcmCertificateArn == nil || *vc.AcmCertificateArn != edgeCert || vc.MinimumProtocolVersion == nil ||
		*vc.MinimumProtocolVersion != "TLSv1.2_2021" || vc.SslSupportMethod == nil || *vc.SslSupportMethod != "sni-only" || !slices.Equal(dc.Aliases, []string{edgeDomain}) {
		t.Errorf("viewer certificate %+v, aliases %v: want %s with its certificate, TLS 1.2 or later", vc, dc.Aliases, edgeDomain)
	}
	// CloudFront presents the client certificate the custom domain
	// requires (origin mutual TLS). goformation predates the property:
	// read it from the template as deployed.
	origins, _ := s.Properties("EdgeDistribution")["DistributionConfig"].(map[string]any)["Origins"].([]any)
	if len(origins) != 1 || fmt.Sprint(origins[0].(map[string]any)["CustomOriginConfig"].(map[string]any)["OriginMtlsConfig"]) != fmt.Sprint(map[string]any{"ClientCertificateArn": edgeClientCert}) {
		t.Errorf("origins %v: want the origin to present %s", origins, edgeClientCert)
	}
	// AllViewer forwards the viewer's Host, EdgeDomainName, which is the
	// name the API's custom domain answers.
	if p := dc.DefaultCacheBehavior.OriginRequestPolicyId; p == nil || *p != "216adef6-5c7f-47e4-b989-5492eafa07d3" {
		t.Errorf("origin request policy %v, want AllViewer", p)
	}
	hs := dc.Origins[0].OriginCustomHeaders
	if len(hs) != 1 || !strings.EqualFold(hs[0].HeaderName, httpapi.EdgeHeader) || hs[0].HeaderValue != token {
		t.Errorf("origin headers %+v: want %s carrying the function's token", hs, httpapi.EdgeHeader)
	}
	if b := dc.DefaultCacheBehavior; b.ViewerProtocolPolicy != "https-only" || !slices.Contains(b.AllowedMethods, "POST") {
		t.Errorf("default behaviour %+v: want HTTPS only, POST allowed", b)
	}
	acl, err := s.Typed.GetWAFv2WebACLWithName("EdgeWebAcl")
	if err != nil {
		t.Fatal(err)
	}
	if acl.Scope != "CLOUDFRONT" || len(acl.Rules) != 1 || acl.Rules[0].Statement.RateBasedStatement == nil ||
		acl.Rules[0].Statement.RateBasedStatement.Limit != 300 || acl.Rules[0].Statement.RateBasedStatement.AggregateKeyType != "IP" ||
		acl.Rules[0].Action == nil || acl.Rules[0].Action.Block == nil {
		t.Errorf("web ACL %+v: want one rule blocking over 300 requests per source IP", acl)
	}
	for _, o := range []string{"EdgeUrl", "EdgeCallbackUrl", "EdgeFunctionSourceUrl"} {
		if _, ok := s.Typed.Outputs[o]; !ok {
			t.Errorf("no output %s", o)
		}
	}
}

// TestTemplateAuditKey: the stack's audit key, whose proofs find checks,
// may be used to make a proof (kms:Encrypt) by the decision role alone,
// and only with the encryption context auditkms names; to check one
// (kms:Decrypt) by the account's principals whose IAM policy allows it,
// only with that context; for nothing else by anyone: no GenerateDataKey,
// no ReEncrypt (which could give a ciphertext another context), no
// CreateGrant, no kms:*. The functions' roles (the callback's and the
// worker's) get nothing on it.
func TestTemplateAuditKey(t *testing.T) {
	// With a destination, so that the worker's role exists too.
	s := deploy(t, map[string]string{"DecisionRoleName": "ops/oncecall-decide", "Destination": "webhook", "DestinationUrl": webhookURL})
	key := s.Properties("AuditKey")
	if key == nil || key["EnableKeyRotation"] != true || key["KeyUsage"] != "ENCRYPT_DECRYPT" {
		t.Fatalf("AuditKey %v: want a symmetric encryption key, rotated", key)
	}
	if v := s.Typed.Outputs["AuditKeyArn"].Value; v != "getatt:AuditKey.Arn" {
		t.Errorf("output AuditKeyArn = %v", v)
	}
	account := "arn:aws:iam::" + samtest.Pseudo["AWS::AccountId"] + ":root"
	decider := "arn:aws:iam::" + samtest.Pseudo["AWS::AccountId"] + ":role/ops/oncecall-decide"
	context := []string{auditkms.ContextTicket, auditkms.ContextEntry}
	statements, _ := key["KeyPolicy"].(map[string]any)["Statement"].([]any)
	uses := map[string]bool{}
	for _, st := range statements {
		st, _ := st.(map[string]any)
		if st["Effect"] != "Allow" || fmt.Sprint(st["Principal"]) != fmt.Sprint(map[string]any{"AWS": account}) {
			t.Errorf("statement %v: want only the account's principals, allowed", st)
		}
		cond, _ := st["Condition"].(map[string]any)
		for _, a := range samtest.Strings(st["Action"]) {
			switch {
			case strings.Contains(a, "*"), a == "kms:CreateGrant", strings.HasPrefix(a, "kms:GenerateDataKey"), strings.HasPrefix(a, "kms:ReEncrypt"),
				a == "kms:Sign", a == "kms:GenerateMac", a == "kms:CreateAlias":
				t.Errorf("the key policy allows %s", a)
			case a == "kms:Encrypt" || a == "kms:Decrypt":
				uses[a] = true
				keys := samtest.Strings(cond["ForAllValues:StringEquals"].(map[string]any)["kms:EncryptionContextKeys"])
				if !slices.Equal(keys, context) || fmt.Sprint(cond["Null"]) != fmt.Sprint(map[string]any{"kms:EncryptionContextKeys": "false"}) {
					t.Errorf("%s with encryption context keys %v (%v), want exactly %v", a, keys, cond, context)
				}
				by, _ := cond["ArnEquals"].(map[string]any)
				if a == "kms:Encrypt" && (len(cond) != 3 || by["aws:PrincipalArn"] != decider) {
					t.Errorf("kms:Encrypt allowed on %v, want the decision role %s alone", cond, decider)
				}
			}
		}
	}
	if !uses["kms:Encrypt"] || !uses["kms:Decrypt"] {
		t.Errorf("the key policy allows %v, want kms:Encrypt and kms:Decrypt", uses)
	}
	// Neither function may use the key: not by its ARN, nor by any KMS
	// grant on every resource (the CheckProofs statement lets the
	// account's IAM policies grant kms:Decrypt).
	for _, role := range []string{"CallbackRole", "DeliverRole"} {
		allowed := samtest.Allowed(t, s.Stack, role)
		if len(allowed) == 0 {
			t.Fatalf("%s: no grants read: the role is missing", role)
		}
		for action, resources := range allowed {
			if slices.Contains(resources, "getatt:AuditKey.Arn") || strings.HasPrefix(action, "kms:") && slices.Contains(resources, "*") {
				t.Errorf("%s may %s on %v, the audit key among them", role, action, resources)
			}
		}
	}
}

// TestTemplateReservesNoConcurrencyOnRequest: -1 is there for accounts
// whose quota cannot spare the default reservation.
func TestTemplateReservesNoConcurrencyOnRequest(t *testing.T) {
	fn, err := deploy(t, map[string]string{"ReservedConcurrency": "-1"}).Typed.GetServerlessFunctionWithName("CallbackFunction")
	if err != nil {
		t.Fatal(err)
	}
	if fn.ReservedConcurrentExecutions != nil {
		t.Errorf("ReservedConcurrency=-1 gives %d, want none reserved", *fn.ReservedConcurrentExecutions)
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
	// Flood-proof by default: the template, like the code, accepts no
	// nonce above AIVAX's cost 9.
	if v := deploy(t, nil).env(t)[config.EnvNonceMaxCost]; v != strconv.Itoa(nonce.DefaultMaxCost) || nonce.DefaultMaxCost != 9 {
		t.Errorf("%s = %q by default and nonce.DefaultMaxCost = %d; want both AIVAX's 9", config.EnvNonceMaxCost, v, nonce.DefaultMaxCost)
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
	for _, r := range []string{"6m", "90m", "8760h"} {
		env := deploy(t, map[string]string{"Retention": r}).env(t)
		env[config.EnvTable], env[config.EnvHookKeySecret] = "oncecall-Table-ABC", existingSecret
		if _, err := config.Load(func(k string) string { return env[k] }, config.Lambda, app.FunctionNames()); err != nil {
			t.Errorf("Retention=%s: %v", r, err)
		}
	}
	// The MCP token's secret reaches the configuration that reads it.
	env = deploy(t, map[string]string{"McpTokenSecretArn": existingMCPSecret}).env(t)
	env[config.EnvTable], env[config.EnvHookKeySecret] = "oncecall-Table-ABC", existingSecret
	if c, err := config.Load(func(k string) string { return env[k] }, config.Lambda, app.FunctionNames()); err != nil || c.MCPTokenSecretARN != existingMCPSecret {
		t.Errorf("McpTokenSecretArn: %q, %v", c.MCPTokenSecretARN, err)
	}
	// So do the MCP door's allowed origins: none by default, the
	// parameter's list when set.
	env = deploy(t, map[string]string{"McpAllowedOrigins": "https://app.example.com,http://localhost:6274"}).env(t)
	env[config.EnvTable], env[config.EnvHookKeySecret] = "oncecall-Table-ABC", existingSecret
	if c, err := config.Load(func(k string) string { return env[k] }, config.Lambda, app.FunctionNames()); err != nil ||
		!slices.Equal(c.MCPAllowedOrigins, []string{"https://app.example.com", "http://localhost:6274"}) {
		t.Errorf("McpAllowedOrigins: %q, %v", c.MCPAllowedOrigins, err)
	}
	if _, ok := deploy(t, nil).env(t)[config.EnvMCPAllowedOrigins]; ok {
		t.Errorf("%s is set by default; want no origin allowed", config.EnvMCPAllowedOrigins)
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
	if tb.LocalSecondaryIndexes != nil {
		t.Error("the table has local indexes the code does not use")
	}
	// A stream only feeds the delivery worker: without a destination
	// nothing reads it, and DynamoDB would keep it for nothing.
	if tb.StreamSpecification != nil {
		t.Errorf("a stream %+v without a destination", tb.StreamSpecification)
	}
	tb, _ = deploy(t, map[string]string{"Destination": "webhook", "DestinationUrl": webhookURL}).Typed.GetDynamoDBTableWithName("Table")
	if tb.StreamSpecification == nil || tb.StreamSpecification.StreamViewType != "NEW_IMAGE" {
		t.Errorf("with a destination the stream is %+v, want NEW_IMAGE (the worker's filter reads the new image)", tb.StreamSpecification)
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
		"McpUrl":            "https://ref:HttpApi.execute-api.eu-west-1.amazonaws.com/mcp",
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

// callbackCalls are the store calls the callback makes (dynamo.Store's
// LoadUser, Create, ReadTicket and the replay's reads): the create
// transaction and GetItem.
var callbackCalls = []samtest.StoreCall{{Method: "TransactWriteItems"}, {Method: "GetItem"}}

// inlineCalls are what an inline first attempt adds (dynamo.Store's Lease
// and Finish; a refused lease without the item reads it with GetItem).
var inlineCalls = []samtest.StoreCall{{Method: "UpdateItem"}, {Method: "GetItem"}}

const (
	edgeDomain         = "oncecall.example.com"
	edgeCert           = "arn:aws:acm:us-east-1:123456789012:certificate/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
	edgeTruststore     = "s3://oncecall-edge-trust/origin-ca.pem"
	edgeClientCert     = "arn:aws:acm:us-east-1:123456789012:certificate/1b2c3d4e-5f60-789a-bcde-f0123456789a"
	existingMCPSecret  = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:mcp-token-AbCdEf"
	existingDestSecret = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:helpdesk-AbCdEf"
	webhookURL         = "https://helpdesk.example.com/tickets"
)

// edgeParams are the parameters an edge needs (the rule EdgeInUsEast1),
// with extra ones added.
func edgeParams(extra map[string]string) map[string]string {
	p := map[string]string{"Edge": "cloudfront", "EdgeDomainName": edgeDomain, "EdgeCertificateArn": edgeCert,
		"EdgeTruststoreUri": edgeTruststore, "EdgeClientCertificateArn": edgeClientCert}
	maps.Copy(p, extra)
	return p
}

// callbackTableGrants are the callback's grants on the table, each
// conditioned on the partition keys (dynamodb:LeadingKeys) of the items
// it is for: it puts operations, inserts tickets by UpdateItem and reads
// them and users; an inline first attempt updates tickets' deliveries.
func callbackTableGrants(inline bool) map[samtest.Grant]bool {
	const table = "getatt:Table.Arn"
	out := map[samtest.Grant]bool{
		// A create's items only: never an audit entry, never the
		// delivery's state, and a ticket never Put (replaced whole).
		{Action: "dynamodb:PutItem", Resource: table, Keys: "op#*", Attrs: strings.Join(dynamo.CreateAttributes(), ",")}:        true,
		{Action: "dynamodb:UpdateItem", Resource: table, Keys: "ticket#*", Attrs: strings.Join(dynamo.CreateAttributes(), ",")}: true,
		{Action: "dynamodb:GetItem", Resource: table, Keys: "config#*,op#*,ticket#*,user#*"}:                                    true,
		// The id key, put by the first call on a new table.
		{Action: "dynamodb:PutItem", Resource: table, Keys: "config#*", Attrs: strings.Join(dynamo.IDKeyAttributes(), ",")}: true,
	}
	if inline {
		// The worker's update, on the delivery's own attributes only and
		// returning nothing: never the audit of a person's decision.
		out[samtest.Grant{
			Action: "dynamodb:UpdateItem", Resource: table, Keys: "ticket#*",
			Attrs: strings.Join(dynamo.WorkerAttributes(), ","), Returns: "NONE",
		}] = true
	}
	return out
}

// actionsOn is grants without their conditions.
func actionsOn(grants map[samtest.Grant]bool) map[samtest.Grant]bool {
	out := map[samtest.Grant]bool{}
	for g := range grants {
		out[samtest.Grant{Action: g.Action, Resource: g.Resource}] = true
	}
	return out
}

func TestTemplateLeastPrivilege(t *testing.T) {
	for _, tc := range []struct {
		name      string
		overrides map[string]string
		secret    string
		// inline is the destination secret an inline first attempt reads
		// ("" without inline attempts).
		inline string
		// mcp is the MCP token's secret ("" without a token).
		mcp string
	}{
		{"created secret", nil, "ref:HookKeySecret", "", ""},
		{"existing secret", map[string]string{"HookKeySecretArn": existingSecret}, existingSecret, "", ""},
		// With a destination the callback only queues tickets: nothing more
		// is allowed than without one.
		{"destination", map[string]string{"Destination": "webhook", "DestinationUrl": webhookURL}, "ref:HookKeySecret", "", ""},
		{"destination, inline attempts", map[string]string{"Destination": "webhook", "DestinationUrl": webhookURL, "DeliveryInlineTimeout": "2s", "DestinationSecretArn": existingDestSecret}, "ref:HookKeySecret", existingDestSecret, ""},
		{"zendesk, inline attempts", map[string]string{"Destination": "zendesk", "ZendeskSubdomain": "acme", "DeliveryInlineTimeout": "500ms", "DestinationSecretArn": existingDestSecret, "HookKeySecretArn": existingSecret}, existingSecret, existingDestSecret, ""},
		{"MCP token", map[string]string{"McpTokenSecretArn": existingMCPSecret}, "ref:HookKeySecret", "", existingMCPSecret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := deploy(t, tc.overrides)
			calls := callbackCalls
			if tc.inline != "" {
				calls = append(slices.Clone(calls), inlineCalls...)
			}
			// The store calls' actions, each on the kinds of item it is
			// for: a grant without its condition, or with another, fails.
			want := callbackTableGrants(tc.inline != "")
			if a, b := actionsOn(want), actionsOn(samtest.StoreGrants("getatt:Table.Arn", calls...)); !maps.Equal(a, b) {
				t.Fatalf("the keyed grants name %v; the store calls need %v", a, b)
			}
			want[samtest.Grant{Action: "secretsmanager:GetSecretValue", Resource: tc.secret}] = true
			if tc.inline != "" {
				want[samtest.Grant{Action: "secretsmanager:GetSecretValue", Resource: tc.inline}] = true
			}
			if tc.mcp != "" {
				want[samtest.Grant{Action: "secretsmanager:GetSecretValue", Resource: tc.mcp}] = true
			}
			for _, a := range []string{"logs:CreateLogStream", "logs:PutLogEvents"} {
				want[samtest.Grant{Action: a, Resource: "getatt:CallbackLogGroup.Arn"}] = true
			}
			got := samtest.Grants(allowed(t, s))
			for g := range want {
				if !got[g] {
					t.Errorf("CallbackRole lacks %s", g)
				}
			}
			for g := range got {
				if !want[g] {
					t.Errorf("CallbackRole allows %s, which the callback does not need", g)
				}
			}
			// The function reads the same secrets it may read.
			env := s.env(t)
			if env[config.EnvHookKeySecret] != tc.secret {
				t.Errorf("%s = %q, but the role allows %q", config.EnvHookKeySecret, env[config.EnvHookKeySecret], tc.secret)
			}
			if env[config.EnvDestinationSecret] != tc.inline {
				t.Errorf("%s = %q, want %q", config.EnvDestinationSecret, env[config.EnvDestinationSecret], tc.inline)
			}
			if env[config.EnvMCPTokenSecret] != tc.mcp {
				t.Errorf("%s = %q, but the role allows %q", config.EnvMCPTokenSecret, env[config.EnvMCPTokenSecret], tc.mcp)
			}
			_, created := s.Typed.Resources["HookKeySecret"]
			if created != (tc.secret == "ref:HookKeySecret") {
				t.Errorf("HookKeySecret created = %v with %s", created, tc.name)
			}
		})
	}
}

// TestTemplateCoversTheStoreAPI: every method of dynamo.API says what it
// needs in IAM (samtest.StoreActions), and what the callback is granted is
// named by methods that exist, so that a method added to the store, or
// taken from it, is decided on here rather than found missing on AWS.
func TestTemplateCoversTheStoreAPI(t *testing.T) {
	methods := samtest.Methods[dynamo.API]()
	if mapped := slices.Sorted(maps.Keys(samtest.StoreActions)); !slices.Equal(methods, mapped) {
		t.Errorf("dynamo.API has %v; samtest.StoreActions maps %v", methods, mapped)
	}
	for _, c := range append(slices.Clone(callbackCalls), inlineCalls...) {
		if !slices.Contains(methods, c.Method) {
			t.Errorf("the callback is said to call %s, which dynamo.API does not have", c.Method)
		}
	}
}

// TestTemplateCallbackWithADestination: with a destination the callback
// queues new tickets for it, and with inline first attempts it gets what
// those need; either way its deployed environment loads.
func TestTemplateCallbackWithADestination(t *testing.T) {
	refs := map[string]string{"ref:Table": "oncecall-Table-ABC", "ref:HookKeySecret": existingSecret}
	load := func(t *testing.T, env map[string]string) config.Config {
		t.Helper()
		c, err := config.Load(func(k string) string { return samtest.Resolve(t, env[k], refs) }, config.Lambda, app.FunctionNames())
		if err != nil {
			t.Fatalf("the deployed environment does not load: %v", err)
		}
		return c
	}
	inlineOnly := []string{
		config.EnvInlineTimeout, config.EnvDestinationSecret, config.EnvSettleDelay,
		config.EnvMaxAttempts, config.EnvDedupWindow, config.EnvLookup,
		config.EnvZendeskTenantField, config.EnvZendeskUserField, config.EnvZendeskRequester,
	}

	env := deploy(t, map[string]string{"Destination": "webhook", "DestinationUrl": webhookURL}).env(t)
	c := load(t, env)
	// The URL may carry a token: without inline attempts this function
	// never sends a ticket, so it is not given it (only the worker is).
	if c.Delivery.Destination != config.DestinationWebhook || c.Delivery.URL != "" || c.Delivery.Inline != 0 {
		t.Errorf("webhook, no inline: loaded %+v", c.Delivery)
	}
	if _, ok := env[config.EnvDestinationURL]; ok {
		t.Errorf("%s is set without inline attempts", config.EnvDestinationURL)
	}
	if p := readTemplate(t)["Parameters"].(map[string]any)["DestinationUrl"].(map[string]any); p["NoEcho"] != true {
		t.Errorf("DestinationUrl is echoed (NoEcho %v): a webhook URL may carry a token", p["NoEcho"])
	}
	for _, k := range inlineOnly {
		if _, ok := env[k]; ok {
			t.Errorf("%s is set without inline attempts", k)
		}
	}

	// Without inline attempts the callback still knows the delivery's
	// horizon, for which it keeps the operation of a queued ticket: the
	// same the worker's settings give.
	params := map[string]string{"Destination": "webhook", "DestinationUrl": webhookURL, "DestinationMaxAge": "72h", "DestinationTimeout": "20s"}
	c = load(t, deploy(t, params).env(t))
	if got, want := app.Outbox(c, nil).Horizon, 72*time.Hour+2*20*time.Second+delivery.LeaseMargin+delivery.SettleHorizon; got != want {
		t.Errorf("the callback's delivery horizon is %v, want %v", got, want)
	}

	env = deploy(t, map[string]string{"Destination": "zendesk", "ZendeskSubdomain": "acme"}).env(t)
	c = load(t, env)
	if c.Delivery.Destination != config.DestinationZendesk || c.Delivery.URL != "https://acme.zendesk.com" {
		t.Errorf("zendesk: loaded %+v", c.Delivery)
	}

	env = deploy(t, map[string]string{
		"Destination": "webhook", "DestinationUrl": webhookURL, "DeliveryInlineTimeout": "1500ms",
		"DestinationSecretArn": existingDestSecret, "DestinationDedupWindow": "24h", "DestinationLookup": "true",
		"DestinationSettleDelay": "30s", "DestinationTimeout": "4s", "DestinationMaxAttempts": "5", "DestinationMaxAge": "48h",
	}).env(t)
	c = load(t, env)
	want := config.Delivery{
		Destination: config.DestinationWebhook, URL: webhookURL, SecretARN: existingDestSecret,
		DedupWindow: 24 * time.Hour, Lookup: true, SettleDelay: 30 * time.Second, Timeout: 4 * time.Second,
		MaxAttempts: 5, MaxAge: 48 * time.Hour, Inline: 1500 * time.Millisecond,
	}
	if c.Delivery != want {
		t.Errorf("webhook, inline: loaded\n%+v\nwant\n%+v", c.Delivery, want)
	}

	env = deploy(t, map[string]string{
		"Destination": "zendesk", "DestinationUrl": "https://support.acme.test", "DeliveryInlineTimeout": "5s",
		"DestinationSecretArn": existingDestSecret, "ZendeskTenantField": "360001", "ZendeskRequesterField": "360002", "ZendeskRequesterId": "42",
	}).env(t)
	c = load(t, env)
	if c.Delivery.ZendeskTenantField != 360001 || c.Delivery.ZendeskRequesterField != 360002 || c.Delivery.ZendeskRequesterID != 42 ||
		c.Delivery.URL != "https://support.acme.test" || c.Delivery.Inline != 5*time.Second {
		t.Errorf("zendesk, inline: loaded %+v", c.Delivery)
	}
	if _, ok := env[config.EnvDedupWindow]; ok {
		t.Errorf("%s set for zendesk, which refuses it", config.EnvDedupWindow)
	}

	// Request Tracker: queued only, RT_QUEUE unset; with inline attempts
	// the URL, the queue and the secret.
	env = deploy(t, map[string]string{"Destination": "rt", "DestinationUrl": "https://rt.acme.test", "RtQueue": "IT Support"}).env(t)
	c = load(t, env)
	if _, ok := env[config.EnvRTQueue]; ok || c.Delivery.Destination != config.DestinationRT || c.Delivery.URL != "" {
		t.Errorf("rt, queued only: env %v, loaded %+v", env, c.Delivery)
	}
	env = deploy(t, map[string]string{"Destination": "rt", "DestinationUrl": "https://rt.acme.test", "RtQueue": "IT Support",
		"DeliveryInlineTimeout": "2s", "DestinationSecretArn": existingDestSecret}).env(t)
	c = load(t, env)
	if c.Delivery.RTQueue != "IT Support" || c.Delivery.URL != "https://rt.acme.test" || c.Delivery.SecretARN != existingDestSecret || c.Delivery.Inline != 2*time.Second {
		t.Errorf("rt, inline: loaded %+v", c.Delivery)
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

// TestTemplateHookKeySecretPolicy: the hook-key secret the stack creates
// denies GetSecretValue to every principal but the callback's role, so an
// IAM policy elsewhere in the account (an admin's s3:*-style grant) cannot
// read the key, and no public policy can be attached. An existing secret
// (HookKeySecretArn) keeps the policy its owner gave it.
func TestTemplateHookKeySecretPolicy(t *testing.T) {
	p := deploy(t, nil).Properties("HookKeySecretPolicy")
	if p["SecretId"] != "ref:HookKeySecret" || p["BlockPublicPolicy"] != true {
		t.Fatalf("policy %v: want on HookKeySecret, blocking public policies", p)
	}
	st := p["ResourcePolicy"].(map[string]any)["Statement"].([]any)
	want := fmt.Sprint([]any{map[string]any{
		"Sid": "OnlyTheCallbackReadsTheKey", "Effect": "Deny", "Principal": "*", "Action": "secretsmanager:GetSecretValue", "Resource": "*",
		"Condition": map[string]any{"StringNotEquals": map[string]any{"aws:PrincipalArn": "getatt:CallbackRole.Arn"}},
	}})
	if fmt.Sprint(st) != want {
		t.Errorf("statements %v\nwant %v", st, want)
	}
	if deploy(t, map[string]string{"HookKeySecretArn": existingSecret}).Resource("HookKeySecretPolicy") != nil {
		t.Error("a policy is put on a secret the stack does not own")
	}
}

// TestTemplateSecretsKey: SecretsKmsKeyArn encrypts the secrets the stack
// generates and both functions' environments with a customer-managed key
// (reading a function's configuration, DESTINATION_URL included, then
// needs kms:Decrypt on it), and gives both roles kms:Decrypt on it alone.
// Without it, AWS managed keys and no KMS grant.
func TestTemplateSecretsKey(t *testing.T) {
	const key = "arn:aws:kms:us-east-1:123456789012:key/0a1b2c3d-4e5f-6789-abcd-ef0123456789"
	region := samtest.Pseudo["AWS::Region"]
	samtest.Pseudo["AWS::Region"] = "us-east-1"
	t.Cleanup(func() { samtest.Pseudo["AWS::Region"] = region })
	params := edgeParams(map[string]string{"Destination": "webhook", "DestinationUrl": webhookURL})
	for _, withKey := range []bool{false, true} {
		if withKey {
			params["SecretsKmsKeyArn"] = key
		}
		s := deploy(t, params)
		want := map[bool]any{false: nil, true: key}[withKey]
		for _, r := range []string{"HookKeySecret", "EdgeOriginSecret"} {
			if got := s.Properties(r)["KmsKeyId"]; got != want {
				t.Errorf("with key %v: %s KmsKeyId %v, want %v", withKey, r, got, want)
			}
		}
		for _, fn := range []string{"CallbackFunction", "DeliverFunction"} {
			if got := s.Properties(fn)["KmsKeyArn"]; got != want {
				t.Errorf("with key %v: %s KmsKeyArn %v, want %v", withKey, fn, got, want)
			}
		}
		for _, role := range []string{"CallbackRole", "DeliverRole"} {
			got := samtest.Allowed(t, s.Stack, role)["kms:Decrypt"]
			if w := map[bool][]string{true: {key}}[withKey]; !slices.Equal(got, w) {
				t.Errorf("with key %v: %s may kms:Decrypt %v, want %v", withKey, role, got, w)
			}
		}
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
// random key AIVAX would not know. Resources that exist only with a
// destination are read from the template as written, so they are checked
// whatever the parameters.
func TestTemplateStatefulResourcesChooseTheirFate(t *testing.T) {
	want := map[string]struct{ deletion, replace string }{
		"Table":            {"Retain", "Retain"},
		"CallbackLogGroup": {"Delete", "Delete"},
		"HookKeySecret":    {"Delete", "Retain"},
		// With a destination: the worker's logs go like the callback's; the
		// on-failure queue goes with the stack (and its stream) but
		// survives a replacement, its messages pointing at records still
		// to read; the destination secret is kept on replacement for the
		// credentials put in it.
		"DeliverLogGroup": {"Delete", "Delete"},
		// The outcome read's logs go like the callback's.
		"OutcomeLogGroup":      {"Delete", "Delete"},
		"DeliveryFailureQueue": {"Delete", "Retain"},
		"DestinationSecret":    {"Delete", "Retain"},
		// With the edge: its origin token goes either way; a new one
		// reaches the edge and the function alike.
		"EdgeOriginSecret": {"Delete", "Delete"},
		// Access logs are operational records, like the functions' logs.
		"ApiAccessLogGroup":  {"Delete", "Delete"},
		"EdgeAccessLogGroup": {"Delete", "Delete"},
		// With TableDataEvents: the trail's bucket is the record of who
		// changed what, and outlives the stack like the table.
		"TableTrailBucket": {"Retain", "Retain"},
		// The proofs of past decisions need the audit key.
		"AuditKey": {"Retain", "Retain"},
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

// TestTemplateRetentionIsTheCodes: the Retention parameter accepts a value
// only if the function starts with it (config.Load: 1m to 8760h), so that
// CloudFormation refuses at deploy what would stop every cold start; and
// every value in those bounds written as the parameter promises (a whole
// number of minutes or hours, no leading zero) deploys.
func TestTemplateRetentionIsTheCodes(t *testing.T) {
	p := readTemplate(t)["Parameters"].(map[string]any)["Retention"].(map[string]any)
	nums := []int{0, 1, 2, 9, 10, 30, 59, 60, 61, 90, 99, 100, 999, 1000, 7999, 8000, 8699, 8700, 8759, 8760, 8761, 9000, 9999,
		10000, 99999, 100000, 499999, 500000, 519999, 520000, 524999, 525000, 525599, 525600, 525601, 526000, 600000, 1000000}
	var candidates []string
	for _, n := range nums {
		for _, u := range []string{"", "ms", "s", "m", "h"} {
			candidates = append(candidates, strconv.Itoa(n)+u)
		}
	}
	candidates = append(candidates, "", "1h30m", "1.5h", "01m", "00h", "08760h", "-1h", "+1h", "1H", "24h0m0s", "31536000s", "365d", " 1h", "1h ")
	codeAccepts := func(v string) bool {
		env := map[string]string{config.EnvTable: "oncecall-Table-ABC", config.EnvHookKeySecret: existingSecret, config.EnvRetention: v}
		_, err := config.Load(func(k string) string { return env[k] }, config.Lambda, app.FunctionNames())
		return err == nil
	}
	promised := func(v string) bool {
		for _, u := range []string{"m", "h"} {
			if n, ok := strings.CutSuffix(v, u); ok && n != "" && n[0] != '0' && strings.Trim(n, "0123456789") == "" {
				return true
			}
		}
		return false
	}
	accepted := 0
	for _, v := range candidates {
		template, code := samtest.CheckParameter(p, v) == nil, codeAccepts(v)
		switch {
		case template && !code:
			t.Errorf("Retention=%q deploys, but the function refuses it at every cold start", v)
		case !template && code && promised(v):
			t.Errorf("Retention=%q is refused at deploy, but the function accepts it and the parameter promises it", v)
		case template:
			accepted++
		}
	}
	for _, v := range []string{"5m", "1m", "300s"} {
		if samtest.CheckParameter(p, v) == nil || codeAccepts(v) {
			t.Errorf("Retention=%q, below config.MinRetention, is accepted", v)
		}
	}
	for _, v := range []string{"6m", "59m", "60m", "90m", "24h", "525600m", "8760h"} {
		if err := samtest.CheckParameter(p, v); err != nil || !codeAccepts(v) {
			t.Errorf("Retention=%q: template %v, code %v", v, err, codeAccepts(v))
		}
	}
	if d := p["Default"]; samtest.CheckParameter(p, scalar(d)) != nil || !codeAccepts(scalar(d)) {
		t.Errorf("the default %v is refused", d)
	}
	if min, max := config.MinRetention, config.MaxRetention; min != 6*time.Minute || max != 8760*time.Hour {
		t.Errorf("config's bounds are %s to %s: update the Retention pattern and its ConstraintDescription", min, max)
	}
	t.Logf("%d of %d candidates deploy", accepted, len(candidates))
}

// TestTemplateCallbackCannotReplaceATicket: the internet-facing
// function's role, as deployed, cannot replace a ticket whole (a PutItem
// with only its key and a queued delivery would erase a settled ticket's
// audit and deliver it again), delete one, write an audit entry, or name
// the delivery's state; with inline first attempts, which are off by
// default, it may write the state as the worker does (SECURITY.md), never
// the audit.
func TestTemplateCallbackCannotReplaceATicket(t *testing.T) {
	const table, key = "getatt:Table.Arn", "ticket#00000000-0000-4000-8000-0000000000a1"
	create := strings.Join(dynamo.CreateAttributes(), ",")
	for _, tc := range []struct {
		name   string
		params map[string]string
		inline bool
	}{
		{"defaults", nil, false},
		{"destination", map[string]string{"Destination": "webhook", "DestinationUrl": webhookURL}, false},
		{"destination, inline attempts", map[string]string{"Destination": "webhook", "DestinationUrl": webhookURL, "DeliveryInlineTimeout": "2s", "DestinationSecretArn": existingDestSecret}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			role := samtest.Grants(allowed(t, deploy(t, tc.params)))
			for _, c := range []struct {
				what string
				req  samtest.Grant
				ok   bool
			}{
				{"a ticket replaced by its key and a queued delivery", samtest.Grant{Action: "dynamodb:PutItem", Resource: table, Key: key, Attrs: "attn_due,attn_shard,delivery,pk"}, false},
				{"a ticket replaced by a create's attributes", samtest.Grant{Action: "dynamodb:PutItem", Resource: table, Key: key, Attrs: create}, false},
				{"a ticket deleted", samtest.Grant{Action: "dynamodb:DeleteItem", Resource: table, Key: key}, false},
				{"an audit entry written or erased", samtest.Grant{Action: "dynamodb:UpdateItem", Resource: table, Key: key, Attrs: "audit,pk", Returns: "NONE"}, false},
				{"a delivery's state written or erased", samtest.Grant{Action: "dynamodb:UpdateItem", Resource: table, Key: key, Attrs: "delivery,pk", Returns: "NONE"}, tc.inline},
				{"a ticket inserted as a create does", samtest.Grant{Action: "dynamodb:UpdateItem", Resource: table, Key: key, Attrs: create}, true},
			} {
				if g, ok := samtest.Permits(role, c.req); ok != c.ok {
					t.Errorf("%s (%s): allowed = %v (by %s), want %v", c.what, c.req, ok, g, c.ok)
				}
			}
		})
	}
}
