package main

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testing/samtest"
)

// accessLogFields are what the API's access log must hold for each
// request: who called, which request, which route, the answer and how long
// the function took.
var accessLogFields = []string{
	"$context.identity.sourceIp", "$context.requestId", "$context.status", "$context.routeKey",
	"$context.integrationLatency", "$context.requestTimeEpoch",
}

// TestTemplateAPIAccessLog: the HTTP API logs one JSON line per request
// with the source IP, request id, status, route and integration latency,
// and nothing of a header, a query or the body (the nonce, the model's
// arguments), to a log group kept LogRetentionDays.
func TestTemplateAPIAccessLog(t *testing.T) {
	s := deploy(t, map[string]string{"LogRetentionDays": "90"})
	al, _ := s.Properties("HttpApi")["AccessLogSettings"].(map[string]any)
	if al == nil {
		t.Fatal("HttpApi has no AccessLogSettings: no record of who called")
	}
	if scalar(al["DestinationArn"]) != "getatt:ApiAccessLogGroup.Arn" {
		t.Errorf("access log goes to %v, want ApiAccessLogGroup", al["DestinationArn"])
	}
	format := scalar(al["Format"])
	var line map[string]string
	if err := json.Unmarshal([]byte(format), &line); err != nil {
		t.Fatalf("access log format is not one JSON object of strings: %v\n%s", err, format)
	}
	values := slices.Collect(maps.Values(line))
	for _, f := range accessLogFields {
		if !slices.Contains(values, f) {
			t.Errorf("access log format lacks %s", f)
		}
	}
	for _, v := range values {
		if !strings.HasPrefix(v, "$context.") || strings.ContainsAny(strings.TrimPrefix(v, "$context."), "$ ") {
			t.Errorf("access log field %q is not one $context variable", v)
		}
		for _, banned := range []string{"$request.", "body", "header", "querystring", "authorizer"} {
			if strings.Contains(strings.ToLower(v), banned) {
				t.Errorf("access log field %q may carry what the caller sent", v)
			}
		}
	}
	g := s.Properties("ApiAccessLogGroup")
	if g == nil || scalar(g["RetentionInDays"]) != "90" {
		t.Errorf("ApiAccessLogGroup %v, want RetentionInDays from LogRetentionDays", g)
	}
	if r := s.Resource("ApiAccessLogGroup"); r["DeletionPolicy"] != "Delete" {
		t.Errorf("ApiAccessLogGroup DeletionPolicy %v", r["DeletionPolicy"])
	}
}

// TestTemplateEdgeAccessLog: with the edge, CloudFront's standard logging
// delivers the viewer's records (its IP, which the API sees only as
// CloudFront's) to a log group of the same retention; without it, none.
func TestTemplateEdgeAccessLog(t *testing.T) {
	edgeLogs := []string{"EdgeAccessLogGroup", "EdgeAccessLogSource", "EdgeAccessLogDestination", "EdgeAccessLogDelivery"}
	s := deploy(t, nil)
	for _, r := range edgeLogs {
		if s.Resource(r) != nil {
			t.Errorf("without the edge the stack creates %s", r)
		}
	}
	region := samtest.Pseudo["AWS::Region"]
	samtest.Pseudo["AWS::Region"] = "us-east-1"
	t.Cleanup(func() { samtest.Pseudo["AWS::Region"] = region })
	s = deploy(t, edgeParams(map[string]string{"LogRetentionDays": "14"}))
	src := s.Properties("EdgeAccessLogSource")
	if src == nil || scalar(src["LogType"]) != "ACCESS_LOGS" ||
		!strings.HasSuffix(scalar(src["ResourceArn"]), ":distribution/ref:EdgeDistribution") {
		t.Fatalf("EdgeAccessLogSource %v, want the distribution's access logs", src)
	}
	dst := s.Properties("EdgeAccessLogDestination")
	if dst == nil || !strings.HasSuffix(scalar(dst["DestinationResourceArn"]), ":log-group:ref:EdgeAccessLogGroup") {
		t.Errorf("EdgeAccessLogDestination %v, want EdgeAccessLogGroup", dst)
	}
	d := s.Properties("EdgeAccessLogDelivery")
	if d == nil || scalar(d["DeliverySourceName"]) != "ref:EdgeAccessLogSource" ||
		scalar(d["DeliveryDestinationArn"]) != "getatt:EdgeAccessLogDestination.Arn" {
		t.Errorf("EdgeAccessLogDelivery %v does not join the source to the destination", d)
	}
	if g := s.Properties("EdgeAccessLogGroup"); scalar(g["RetentionInDays"]) != "14" {
		t.Errorf("EdgeAccessLogGroup %v, want RetentionInDays from LogRetentionDays", g)
	}
}

// TestTemplateTableDataEvents: off by default; with TableDataEvents=true a
// trail records the writes to this table only, into a private, versioned,
// kept bucket that CloudTrail may write for this trail only.
func TestTemplateTableDataEvents(t *testing.T) {
	trail := []string{"TableTrail", "TableTrailBucket", "TableTrailBucketPolicy"}
	// The record of who changed what is on by default: the audit on an
	// item is written by whoever may write the item, the trail by AWS.
	s := deploy(t, map[string]string{"TableDataEvents": "false"})
	for _, r := range trail {
		if s.Resource(r) != nil {
			t.Errorf("with TableDataEvents=false the stack creates %s", r)
		}
	}
	s = deploy(t, nil)
	tr := s.Properties("TableTrail")
	if tr == nil {
		t.Fatal("TableDataEvents=true creates no trail")
	}
	if scalar(tr["S3BucketName"]) != "ref:TableTrailBucket" || scalar(tr["IsLogging"]) != "true" || scalar(tr["EnableLogFileValidation"]) != "true" {
		t.Errorf("TableTrail %v", tr)
	}
	sels, _ := tr["AdvancedEventSelectors"].([]any)
	if len(sels) != 1 {
		t.Fatalf("AdvancedEventSelectors %v, want one", tr["AdvancedEventSelectors"])
	}
	got := map[string]string{}
	for _, f := range sels[0].(map[string]any)["FieldSelectors"].([]any) {
		m := f.(map[string]any)
		if len(m) != 2 || m["Equals"] == nil {
			t.Errorf("field selector %v is not one Equals", m)
		}
		got[scalar(m["Field"])] = strings.Join(stringsOf(m["Equals"]), ",")
	}
	want := map[string]string{
		"eventCategory": "Data", "resources.type": "AWS::DynamoDB::Table",
		"resources.ARN": "getatt:Table.Arn", "readOnly": "false",
	}
	if !maps.Equal(got, want) {
		t.Errorf("field selectors %v, want %v (this table's writes only)", got, want)
	}
	b := s.Resource("TableTrailBucket")
	if b["DeletionPolicy"] != "Retain" || b["UpdateReplacePolicy"] != "Retain" {
		t.Errorf("the trail's bucket is not kept: %v", b)
	}
	bp := s.Properties("TableTrailBucket")
	pab, _ := bp["PublicAccessBlockConfiguration"].(map[string]any)
	for _, k := range []string{"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"} {
		if scalar(pab[k]) != "true" {
			t.Errorf("TableTrailBucket %s = %v", k, pab[k])
		}
	}
	if v, _ := bp["VersioningConfiguration"].(map[string]any); scalar(v["Status"]) != "Enabled" {
		t.Errorf("TableTrailBucket versioning %v", v)
	}
	trailArn := ":trail/" + scalar(tr["TrailName"])
	pol := s.Properties("TableTrailBucketPolicy")["PolicyDocument"].(map[string]any)
	writers := 0
	for _, st := range pol["Statement"].([]any) {
		m := st.(map[string]any)
		if m["Effect"] != "Allow" {
			continue
		}
		writers++
		p, _ := m["Principal"].(map[string]any)
		if scalar(p["Service"]) != "cloudtrail.amazonaws.com" {
			t.Errorf("the trail's bucket allows %v", p)
		}
		c, _ := m["Condition"].(map[string]any)
		eq, _ := c["StringEquals"].(map[string]any)
		if !strings.HasSuffix(scalar(eq["aws:SourceArn"]), trailArn) {
			t.Errorf("statement %v is not limited to this trail (%s)", m["Sid"], trailArn)
		}
	}
	if writers != 2 {
		t.Errorf("%d Allow statements, want CloudTrail's ACL check and write", writers)
	}
}

func stringsOf(v any) []string {
	var out []string
	for _, e := range v.([]any) {
		out = append(out, scalar(e))
	}
	return out
}
