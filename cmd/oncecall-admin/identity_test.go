package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/oncecall/oncecall/internal/dev/helpdesk"
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
	if !strings.Contains(res.stdout, `by "`+callerARN+`", operator label "root-admin"`) {
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
	if res := d.must(exitOK, "find", "-ticket", id); !strings.Contains(res.stdout, `by "alice" (unverified)`) {
		t.Errorf("find:\n%s", res.stdout)
	}
}
