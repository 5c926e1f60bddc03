package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	ststypes "github.com/aws/aws-sdk-go-v2/service/sts/types"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
)

// fakeSTS answers GetCallerIdentity as STS would for one set of
// credentials, and counts the calls.
type fakeSTS struct {
	arn   string
	err   error
	calls int
}

func (f *fakeSTS) GetCallerIdentity(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return &sts.GetCallerIdentityOutput{Arn: aws.String(f.arn), Account: aws.String("123456789012"), UserId: aws.String("AROAEXAMPLE:alice-session")}, nil
}

const callerARN = "arn:aws:sts::123456789012:assumed-role/oncecall-settle/alice-session"

// TestSettleAuditsTheCallersAWSIdentity: with an AWS identity, the audit and
// the log line name the ARN STS answered, marked verified; the -operator
// name the person typed is kept apart as a label, and never becomes the
// identity, whatever it claims.
func TestSettleAuditsTheCallersAWSIdentity(t *testing.T) {
	d := newDesk(t)
	f := &fakeSTS{arn: callerARN}
	d.sts = f
	id := d.create("user-a", "req-id-aws", "Audited by AWS")
	d.attempt(id, fault(helpdesk.FailAfter, 500, ""))
	hd := d.hd.TicketsByExternalID(id)[0]
	o, log := d.settle("-ticket", id, "-as", "delivered", "-expect", "uncertain", "-helpdesk-id", "1",
		"-operator", "root-admin", "-url", hd.URL)
	a := o.Delivery.Audit
	if len(a) != 1 || a[0].Who != callerARN || a[0].Via != viaAWS || !a[0].Verified || a[0].Operator != "root-admin" {
		t.Fatalf("audit %+v, want the caller's ARN, verified, with the operator label apart", a)
	}
	if strings.Contains(a[0].Who, "root-admin") {
		t.Errorf("the operator label reached the identity: %q", a[0].Who)
	}
	if log.Who != callerARN || log.Via != viaAWS || !log.Verified || log.Operator != "root-admin" {
		t.Errorf("log line %+v", log)
	}
	if f.calls != 1 {
		t.Errorf("%d GetCallerIdentity calls, want 1", f.calls)
	}
	// The audit as stored, read back by find.
	res := d.must(exitOK, "find", "-ticket", id)
	if !strings.Contains(res.stdout, `by "`+callerARN+`" (not checked: no -audit-key given (the stack's AuditKeyArn output)), operator label "root-admin"`) {
		t.Errorf("find does not tell the identity from the label:\n%s", res.stdout)
	}

	// Without an identity nothing is changed.
	f.err = errors.New("ExpiredToken")
	id2 := d.create("user-a", "req-id-aws-2", "No identity")
	d.attempt(id2, fault(helpdesk.FailAfter, 500, ""))
	before := d.record(id2)
	res = d.run("delivery", "settle", "-ticket", id2, "-as", "abandoned", "-expect", "uncertain", "-reason", "r", "-operator", "root-admin")
	if res.code == exitOK || !strings.Contains(res.stderr, "nothing was changed") {
		t.Errorf("settle without an identity: exit %d %s", res.code, res.stderr)
	}
	if after := d.record(id2); after.Version != before.Version || len(after.Audit) != 0 {
		t.Errorf("the delivery changed without an identity: %+v", after)
	}
}

// TestSettleOffAWSIsUnverified: off AWS the only name is the one given,
// and the audit says nothing verified it.
func TestSettleOffAWSIsUnverified(t *testing.T) {
	d := newDesk(t)
	id := d.create("user-a", "req-id-local", "Audited locally")
	d.attempt(id, fault(helpdesk.FailAfter, 500, ""))
	o, log := d.settle("-ticket", id, "-as", "abandoned", "-expect", "uncertain", "-reason", "r")
	a := o.Delivery.Audit
	if len(a) != 1 || a[0].Who != "alice" || a[0].Via != viaOperatorEnv || a[0].Verified {
		t.Fatalf("audit %+v, want alice from %s, unverified", a, viaOperatorEnv)
	}
	if log.Verified {
		t.Errorf("log line %+v says verified", log)
	}
	if res := d.must(exitOK, "find", "-ticket", id); !strings.Contains(res.stdout, `by "alice" (unverified name; not checked: no -audit-key given`) {
		t.Errorf("find:\n%s", res.stdout)
	}
}

// TestFindNeverShowsAForgedEntryAsVerified: whoever may write a ticket
// item may write an audit entry claiming any identity, verified; without
// an audit key to check its proof with, find shows the stored claim as
// not checked, never as proven (TestAnAuditEntryProvesItself checks
// proofs).
func TestFindNeverShowsAForgedEntryAsVerified(t *testing.T) {
	d := newDesk(t)
	id := d.create("user-a", "req-id-forged", "Forged audit")
	d.attempt(id, fault(helpdesk.FailAfter, 500, ""))
	d.settle("-ticket", id, "-as", "abandoned", "-expect", "uncertain", "-reason", "r")
	// A writer with UpdateItem on the item rewrites the entry.
	const bob = "arn:aws:iam::123456789012:user/bob"
	_, err := d.rig.env.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(d.rig.env.Table), Key: map[string]dbtypes.AttributeValue{dynamo.PartitionKey: &dbtypes.AttributeValueMemberS{Value: "ticket#" + id}},
		UpdateExpression:          aws.String("SET audit[0].who = :who, audit[0].verified = :true, audit[0].via = :via"),
		ExpressionAttributeValues: map[string]dbtypes.AttributeValue{":who": &dbtypes.AttributeValueMemberS{Value: bob}, ":true": &dbtypes.AttributeValueMemberBOOL{Value: true}, ":via": &dbtypes.AttributeValueMemberS{Value: viaAWS}},
	})
	if err != nil {
		t.Fatal(err)
	}
	res := d.must(exitOK, "find", "-ticket", id)
	if !strings.Contains(res.stdout, `by "`+bob+`" (not checked: no -audit-key given`) || strings.Contains(res.stdout, "proven:") {
		t.Errorf("find shows the forged entry as:\n%s", res.stdout)
	}
}

// fakeRoleSTS is fakeSTS that can also assume a role, and keeps what it
// was asked.
type fakeRoleSTS struct {
	fakeSTS
	assumed *sts.AssumeRoleInput
}

func (f *fakeRoleSTS) AssumeRole(_ context.Context, in *sts.AssumeRoleInput, _ ...func(*sts.Options)) (*sts.AssumeRoleOutput, error) {
	f.assumed = in
	return &sts.AssumeRoleOutput{Credentials: &ststypes.Credentials{
		AccessKeyId: aws.String("ASIAEXAMPLE"), SecretAccessKey: aws.String("secret"), SessionToken: aws.String("token"),
		Expiration: aws.Time(time.Now().Add(time.Hour)),
	}}, nil
}

// TestAssumeRoleSetsTheSourceIdentity: -role-arn assumes the role with the
// caller's own AWS name as the session's source identity (which AWS keeps
// for the session and CloudTrail records), and the audit records it beside
// the identity.
func TestAssumeRoleSetsTheSourceIdentity(t *testing.T) {
	const role = "arn:aws:iam::123456789012:role/oncecall-settle"
	f := &fakeRoleSTS{fakeSTS: fakeSTS{arn: "arn:aws:iam::123456789012:user/alice@example.com"}}
	cfg, si, err := assumeRole(context.Background(), aws.Config{}, f, role)
	if err != nil {
		t.Fatal(err)
	}
	if si != "alice@example.com" || f.assumed == nil || aws.ToString(f.assumed.SourceIdentity) != si ||
		aws.ToString(f.assumed.RoleArn) != role || aws.ToString(f.assumed.RoleSessionName) != si {
		t.Fatalf("source identity %q, AssumeRole %+v", si, f.assumed)
	}
	if c, err := cfg.Credentials.Retrieve(context.Background()); err != nil || c.AccessKeyID != "ASIAEXAMPLE" {
		t.Errorf("the assumed credentials: %+v, %v", c, err)
	}
	w, err := awsIdentity{api: &fakeSTS{arn: callerARN}, sourceIdentity: si}.identify(context.Background())
	if err != nil || w.SourceIdentity != si || w.Who != callerARN {
		t.Errorf("who %+v, %v", w, err)
	}
}

// TestSourceIdentityOf: only an IAM user's name becomes a source identity;
// an assumed role's session name, which whoever assumed it chose, never
// does.
func TestSourceIdentityOf(t *testing.T) {
	for _, tc := range []struct{ arn, want string }{
		{"arn:aws:iam::123456789012:user/alice", "alice"},
		{"arn:aws:iam::123456789012:user/ops/alice@example.com", "alice@example.com"},
		{"arn:aws:iam::123456789012:user/ca rol/ïne", "ne"},
		{"arn:aws:iam::123456789012:user/" + strings.Repeat("x", 80), strings.Repeat("x", 64)},
		{"arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_Admin_0a1b/bob.smith@example.com", ""},
		{"arn:aws:sts::123456789012:assumed-role/oncecall-users/ceo@example.com", ""},
		{"arn:aws:sts::123456789012:federated-user/ceo", ""},
		{"arn:aws:iam::123456789012:root", ""},
	} {
		if got, err := sourceIdentityOf(tc.arn); err != nil || got != tc.want {
			t.Errorf("sourceIdentityOf(%q) = %q, %v; want %q", tc.arn, got, err, tc.want)
		}
	}
	if _, err := sourceIdentityOf("arn:aws:iam::123456789012:user/é"); err == nil {
		t.Error("a name with no usable character became a source identity")
	}
}

// TestAssumeRoleFromASessionChoosesNoSourceIdentity: a caller that is
// itself an assumed role (its ARN ends in a session name it chose, such
// as someone else's name) assumes the role without a source identity of
// the tool's making, and the audit records none: AWS carries the
// session's own, if its identity provider set one.
func TestAssumeRoleFromASessionChoosesNoSourceIdentity(t *testing.T) {
	const role = "arn:aws:iam::123456789012:role/oncecall-settle"
	f := &fakeRoleSTS{fakeSTS: fakeSTS{arn: "arn:aws:sts::123456789012:assumed-role/oncecall-users/ceo@example.com"}}
	_, si, err := assumeRole(context.Background(), aws.Config{}, f, role)
	if err != nil {
		t.Fatal(err)
	}
	if si != "" || f.assumed == nil || f.assumed.SourceIdentity != nil || aws.ToString(f.assumed.RoleSessionName) != roleSessionName {
		t.Fatalf("source identity %q, AssumeRole %+v: want none, session %s", si, f.assumed, roleSessionName)
	}
}

// TestRoleARNNeedsAWS: -role-arn is refused off AWS, before anything.
func TestRoleARNNeedsAWS(t *testing.T) {
	r := newRig(t)
	res := r.run("user", "disable", "-id", "user-a", "-operator", "o", "-role-arn", "arn:aws:iam::123456789012:role/x")
	if res.code != exitUsage || !strings.Contains(res.stderr, "-role-arn") {
		t.Errorf("exit %d %s", res.code, res.stderr)
	}
}
