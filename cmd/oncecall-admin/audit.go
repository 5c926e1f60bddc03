package main

import (
	"context"
	"flag"
	"regexp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/oncecall/oncecall/internal/auditkms"
	"github.com/oncecall/oncecall/internal/delivery"
)

// Settings of the audit's proof.
const (
	// envAuditKey is the audit key when -audit-key is not given: the
	// stack's AuditKeyArn output.
	envAuditKey = "ONCECALL_AUDIT_KEY"
	// envKMSEndpoint names, off AWS, a KMS-compatible server to make and
	// check proofs with (a local one: internal/local/localkms).
	envKMSEndpoint = "ONCECALL_KMS_ENDPOINT"
)

// keyARN is a KMS key's ARN: an audit key is named by its ARN only, which
// is what KMS's Decrypt answers with, never by an alias.
var keyARN = regexp.MustCompile(`^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/[0-9a-f-]{1,64}$`)

// What find says of an entry's proof (auditView.Proof).
const (
	proofProven     = "proven"
	proofNotProven  = "not_proven"
	proofNotChecked = "not_checked"
)

// auditFlags is -audit-key, declared by the commands that write or show
// an audit.
type auditFlags struct{ key string }

func (f *auditFlags) declare(fs *flag.FlagSet) {
	fs.StringVar(&f.key, "audit-key", "", "the audit key's ARN (the stack's AuditKeyArn output; default $"+envAuditKey+"): a decision carries a proof made with it, find checks each entry's")
}

// resolve is the audit key given, "" for none, or a usage error.
func (f *auditFlags) resolve(getenv func(string) string) (string, error) {
	key, from := f.key, "-audit-key"
	if key == "" {
		key, from = getenv(envAuditKey), envAuditKey
	}
	if key != "" && !keyARN.MatchString(key) {
		return "", usageError("%s=%q is not a KMS key's ARN (arn:aws:kms:REGION:ACCOUNT:key/ID): give the stack's AuditKeyArn output", from, key)
	}
	return key, nil
}

// auditKey connects the session to its audit key, when one was given: KMS
// on AWS with the command's credentials (the decision role's, with
// -role-arn), elsewhere the server ONCECALL_KMS_ENDPOINT names. On AWS a
// decision without one is refused before (tool.parse): every decision
// made there carries its proof.
func (s *session) auditKey(cfg aws.Config) error {
	if !s.cmd.audit {
		return nil
	}
	key, err := s.inv.audit.resolve(s.tool.getenv)
	if err != nil {
		return err
	}
	endpoint := s.tool.getenv(envKMSEndpoint)
	switch {
	case key == "": // on AWS, a change without one was refused (parse)
		return nil
	case s.target.kind == targetAWS && endpoint != "":
		return usageError("-aws uses KMS on AWS, but %s=%s names another: unset %s", envKMSEndpoint, endpoint, envKMSEndpoint)
	case s.target.kind != targetAWS && endpoint == "":
		return usageError("-audit-key off AWS needs a KMS-compatible server: set %s to its URL (or leave the audit key out: entries then carry no proof)", envKMSEndpoint)
	}
	var opts []func(*kms.Options)
	if endpoint != "" {
		if err := checkKMSEndpoint(endpoint); err != nil {
			return err
		}
		opts = append(opts, func(o *kms.Options) { o.BaseEndpoint = aws.String(endpoint) })
	}
	s.audit = &auditkms.Key{API: kms.NewFromConfig(cfg, opts...), ARN: key}
	return nil
}

// checkKMSEndpoint refuses what is not a URL, and AWS's own KMS.
func checkKMSEndpoint(endpoint string) error {
	if err := checkEndpoint(endpoint, envKMSEndpoint); err != nil {
		return usageError("%s=%s: a KMS-compatible server off AWS, by an http:// or https:// URL (KMS on AWS goes with -aws)", envKMSEndpoint, endpoint)
	}
	return nil
}

// checkAudit says, for each entry of v's audit (the delivery of ticket id,
// r as read), whether its proof holds. Without an audit key nothing is
// checked, and no entry reads proven.
func (s *session) checkAudit(ctx context.Context, id string, r *delivery.Record, v *deliveryView) error {
	if v == nil {
		return nil
	}
	for i := range v.Audit {
		a := &v.Audit[i]
		if s.audit == nil {
			a.Proof, a.ProofNote = proofNotChecked, "no -audit-key given (the stack's AuditKeyArn output)"
			continue
		}
		verdict, err := s.audit.Check(ctx, id, r.Audit[i])
		if err != nil {
			return err
		}
		if verdict.Proven {
			a.Proof = proofProven
			continue
		}
		a.Proof, a.ProofNote = proofNotProven, verdict.Why
	}
	return nil
}

// proofLabel says, for a person, what an audit entry's identity is worth:
// whether the name was verified when it was written (off AWS nothing
// verifies it) and whether the entry proves itself. Only a proof makes an
// entry proven: its verified flag is stored like the rest of it, so
// whoever may write the item may write it.
func proofLabel(a auditView) string {
	s := "("
	if !a.Verified {
		s += "unverified name; "
	}
	switch a.Proof {
	case proofProven:
		return s + "proven: written with the decision role's audit key, unchanged since)"
	case proofNotChecked:
		return s + "not checked: " + a.ProofNote + ")"
	}
	return s + "NOT proven: " + a.ProofNote + ")"
}
