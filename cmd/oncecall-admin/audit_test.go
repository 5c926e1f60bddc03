package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/oncecall/oncecall/internal/auditkms"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/localkms"
)

// auditOf is what find -json says of the audit of ticket id.
func (d *desk) auditOf(id string, args ...string) []auditView {
	d.t.Helper()
	res := d.must(exitOK, append([]string{"find", "-ticket", id, "-json"}, args...)...)
	var out struct {
		Matches []matchView `json:"matches"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || len(out.Matches) != 1 || out.Matches[0].Delivery == nil {
		d.t.Fatalf("find -json: %v\n%s", err, res.stdout)
	}
	return out.Matches[0].Delivery.Audit
}

// appendEntry appends an audit entry to ticket id as a writer of the item
// would, without the admin tool.
func (d *desk) appendEntry(id string, entry map[string]dbtypes.AttributeValue) {
	d.t.Helper()
	_, err := d.rig.env.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(d.rig.env.Table), Key: map[string]dbtypes.AttributeValue{dynamo.PartitionKey: &dbtypes.AttributeValueMemberS{Value: "ticket#" + id}},
		UpdateExpression:          aws.String("SET audit = list_append(audit, :e)"),
		ExpressionAttributeValues: map[string]dbtypes.AttributeValue{":e": &dbtypes.AttributeValueMemberL{Value: []dbtypes.AttributeValue{&dbtypes.AttributeValueMemberM{Value: entry}}}},
	})
	if err != nil {
		d.t.Fatal(err)
	}
}

// forgedEntry is decision f as an audit entry, with proof (none when nil).
func forgedEntry(f delivery.Decision, proof []byte) map[string]dbtypes.AttributeValue {
	s := func(v string) dbtypes.AttributeValue { return &dbtypes.AttributeValueMemberS{Value: v} }
	m := map[string]dbtypes.AttributeValue{
		"who": s(f.Who), "via": s(f.Via), "verified": &dbtypes.AttributeValueMemberBOOL{Value: f.Verified},
		"at": &dbtypes.AttributeValueMemberN{Value: strconv.FormatInt(f.At.UnixMilli(), 10)}, "action": s(f.Action), "from": s(string(f.From)), "to": s(string(f.To)), "reason": s(f.Reason),
	}
	if proof != nil {
		m["proof"] = &dbtypes.AttributeValueMemberB{Value: proof}
	}
	return m
}

// TestAnAuditEntryProvesItself: a decision made with the audit key carries
// a proof, and find shows it proven; an entry written by anyone else, or
// changed after its proof was made, is never shown proven, whatever it
// claims: one without a proof, one whose proof was made under another key
// of the account, for another entry, or by GenerateDataKey under the audit
// key itself, and the genuine entry once its "who" is rewritten.
func TestAnAuditEntryProvesItself(t *testing.T) {
	// Local KMS keeps KMS's cryptography but not IAM: who may call
	// Encrypt on the audit key (the key policy) is checked against the
	// template and the documented roles instead (TestTemplateAuditKey,
	// TestDocumentedRoles).
	srv, client := localkms.ForTest(t)
	d := newDesk(t)
	d.sts = &fakeSTS{arn: callerARN}
	d.rig.vars[envKMSEndpoint] = srv.URL
	d.rig.vars[envAuditKey] = localkms.AuditKey
	id := d.create("user-a", "req-id-proof", "Proven audit")
	d.attempt(id, fault(helpdesk.FailAfter, 500, ""))
	o, _ := d.settle("-ticket", id, "-as", "abandoned", "-expect", "uncertain", "-reason", "withdrawn", "-operator", "on call")
	if a := o.Delivery.Audit; len(a) != 1 || a[0].Proof != proofProven {
		t.Fatalf("settle's audit %+v, want one proven entry", a)
	}
	res := d.must(exitOK, "find", "-ticket", id)
	if !strings.Contains(res.stdout, `by "`+callerARN+`" (proven: written with the decision role's audit key, unchanged since), operator label "on call"`) {
		t.Fatalf("find shows the genuine entry as:\n%s", res.stdout)
	}
	genuine := d.record(id).Audit[0]

	// Entries a writer of the item adds: bob's abandonment, verified.
	const bob = "arn:aws:iam::123456789012:user/bob"
	forged := delivery.Decision{Actor: delivery.Actor{Who: bob, Via: viaAWS, Verified: true}, Action: "settle.abandoned", From: delivery.Uncertain, To: delivery.Abandoned, Reason: "r"}
	forged.At = genuine.At.Add(time.Minute)
	ctx := context.Background()
	// A proof made for it under another key of the account.
	underOther, err := auditkms.Key{API: client, ARN: localkms.OtherKey}.Prove(ctx, id, forged)
	if err != nil {
		t.Fatal(err)
	}
	// A ciphertext under the audit key with its encryption context, made
	// by GenerateDataKey (its plaintext is a random key, not the entry).
	_, digest := delivery.AuditProof(id, forged)
	dataKey, err := client.GenerateDataKey(ctx, &kms.GenerateDataKeyInput{
		KeyId: aws.String(localkms.AuditKey), NumberOfBytes: aws.Int32(32),
		EncryptionContext: map[string]string{auditkms.ContextTicket: id, auditkms.ContextEntry: digest},
	})
	if err != nil {
		t.Fatal(err)
	}
	// No proof, the one under another key, the genuine entry's, the
	// data key's.
	for _, proof := range [][]byte{nil, underOther, genuine.Proof, dataKey.CiphertextBlob} {
		d.appendEntry(id, forgedEntry(forged, proof))
	}
	audit := d.auditOf(id)
	if len(audit) != 5 || audit[0].Proof != proofProven {
		t.Fatalf("audit %+v, want the genuine entry proven and four more", audit)
	}
	for i, why := range []string{auditkms.WhyNoProof, auditkms.WhyMismatch, auditkms.WhyMismatch, auditkms.WhyMismatch} {
		if a := audit[i+1]; a.Who != bob || a.Proof != proofNotProven || a.ProofNote != why {
			t.Errorf("forged entry %d: %+v, want not proven: %s", i+1, a, why)
		}
	}

	// The genuine entry, rewritten after its proof was made.
	_, err = d.rig.env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(d.rig.env.Table), Key: map[string]dbtypes.AttributeValue{dynamo.PartitionKey: &dbtypes.AttributeValueMemberS{Value: "ticket#" + id}},
		UpdateExpression:          aws.String("SET audit[0].who = :who"),
		ExpressionAttributeValues: map[string]dbtypes.AttributeValue{":who": &dbtypes.AttributeValueMemberS{Value: bob}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if a := d.auditOf(id)[0]; a.Who != bob || a.Proof != proofNotProven || a.ProofNote != auditkms.WhyMismatch {
		t.Errorf("the rewritten entry: %+v, want not proven: %s", a, auditkms.WhyMismatch)
	}
	res = d.must(exitOK, "find", "-ticket", id)
	if strings.Contains(res.stdout, `by "`+bob+`" (proven`) || !strings.Contains(res.stdout, `by "`+bob+`" (NOT proven: `+auditkms.WhyMismatch+`)`) {
		t.Errorf("find shows a forged entry as proven, or without saying why not:\n%s", res.stdout)
	}
	// Without the audit key nothing is checked, and nothing reads proven.
	delete(d.rig.vars, envAuditKey)
	for _, a := range d.auditOf(id) {
		if a.Proof != proofNotChecked {
			t.Errorf("without an audit key: %+v, want not checked", a)
		}
	}
}

// TestADecisionOnAWSNeedsTheAuditKey: on AWS a decision is refused before
// anything is read or written unless the audit key is given, by its ARN
// (an alias would not match what KMS's Decrypt names); find may run
// without it (nothing is then checked), and off AWS a decision may too
// (it carries no proof).
func TestADecisionOnAWSNeedsTheAuditKey(t *testing.T) {
	const key = "arn:aws:kms:eu-west-1:123456789012:key/6f1c2a8e-0b3d-4e5f-8a9b-0c1d2e3f4a5b"
	settle := []string{"delivery", "settle", "-ticket", "5b0c4f2e-8d1a-4c3b-9e7f-0a1b2c3d4e5f", "-as", "abandoned", "-expect", "failed", "-reason", "r"}
	aws := map[string]string{"TABLE_NAME": "t", "AWS_REGION": "eu-west-1"}
	for _, c := range []struct {
		args []string
		vars map[string]string
		want string // "" parses
	}{
		{append(append([]string{}, settle...), "-aws"), aws, "give -audit-key"},
		{[]string{"delivery", "recover", "-aws"}, aws, "give -audit-key"},
		{append(append([]string{}, settle...), "-aws", "-audit-key", key), aws, ""},
		{append(append([]string{}, settle...), "-aws"), map[string]string{"TABLE_NAME": "t", "AWS_REGION": "eu-west-1", envAuditKey: key}, ""},
		{append(append([]string{}, settle...), "-aws", "-audit-key", "alias/oncecall-audit"), aws, "is not a KMS key's ARN"},
		{[]string{"find", "-ticket", "5b0c4f2e-8d1a-4c3b-9e7f-0a1b2c3d4e5f", "-aws"}, aws, ""},
		{append(append([]string{}, settle...), "-operator", "alice"), map[string]string{}, ""},
	} {
		err := parseOnly(&rig{t: t, vars: c.vars, local: closedEndpoint}, c.args)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v, want it to parse", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: %v, want refused: %s", c.args, err, c.want)
		}
	}
}
