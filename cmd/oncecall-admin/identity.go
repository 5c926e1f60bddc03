package main

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/oncecall/oncecall/internal/delivery"
)

// Where a change's identity came from (delivery.Actor.Via).
const (
	// viaAWS: the caller's AWS identity, as STS GetCallerIdentity answered
	// for the credentials the change is made with.
	viaAWS = "aws_caller_identity"
	// viaOperatorFlag and viaOperatorEnv: off AWS, a name the person gave,
	// which nothing verifies.
	viaOperatorFlag = "-operator"
	viaOperatorEnv  = envOperator
	// viaUnnamed: off AWS, a change that needs no name, made without one.
	viaUnnamed = "unnamed"
)

// actorLabel writes a for a person: the identity, "(unverified)" when
// nothing verified it, and any operator label apart.
func actorLabel(a delivery.Actor) string {
	s := a.Who
	if !a.Verified {
		s += " (unverified)"
	}
	if a.Operator != "" {
		s += fmt.Sprintf(", operator label %q", a.Operator)
	}
	return s
}

// identifier establishes who makes a change. Without an identity nothing
// may be changed.
type identifier interface {
	identify(ctx context.Context) (delivery.Actor, error)
}

// callerIdentityAPI is the STS call awsIdentity makes.
type callerIdentityAPI interface {
	GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// awsIdentity is the identity of the AWS credentials a change is made
// with, whatever -operator says.
type awsIdentity struct {
	api      callerIdentityAPI
	operator string
	// sourceIdentity is the one the session was assumed with, if any.
	sourceIdentity string
}

func (a awsIdentity) identify(ctx context.Context) (delivery.Actor, error) {
	if a.operator != "" {
		if err := checkOperator(a.operator, "-operator"); err != nil {
			return delivery.Actor{}, err
		}
	}
	out, err := a.api.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return delivery.Actor{}, fmt.Errorf("cannot establish who you are on AWS (STS GetCallerIdentity): %w; nothing was changed", err)
	}
	arn := aws.ToString(out.Arn)
	if arn == "" {
		return delivery.Actor{}, fmt.Errorf("STS GetCallerIdentity answered no ARN; nothing was changed")
	}
	return delivery.Actor{Who: arn, Via: viaAWS, Verified: true, SourceIdentity: a.sourceIdentity, Operator: a.operator}, nil
}

// localIdentity is, off AWS, the name the person gives: -operator, else
// ONCECALL_OPERATOR. Nothing verifies it (Verified is false), and a local
// store has no other.
type localIdentity struct {
	flags  *operatorFlags
	getenv func(string) string
	// anyone: the command needs no name (table create); without one the
	// change is logged as unnamed.
	anyone bool
}

func (l localIdentity) identify(context.Context) (delivery.Actor, error) {
	name, err := l.flags.local(l.getenv, l.anyone)
	if err != nil {
		return delivery.Actor{}, err
	}
	via := viaOperatorFlag
	switch {
	case name == "":
		via = viaUnnamed
	case l.flags.name == "":
		via = viaOperatorEnv
	}
	return delivery.Actor{Who: name, Via: via}, nil
}

// identifier returns how s establishes who makes a change: the AWS caller
// identity on AWS (or wherever the tool was given an STS client, as tests
// give it), the operator's name elsewhere.
func (s *session) identifier() identifier {
	switch {
	case s.tool.sts != nil:
		return awsIdentity{api: s.tool.sts, operator: s.inv.who.name, sourceIdentity: s.sourceIdentity}
	case s.target.kind == targetAWS:
		return awsIdentity{api: sts.NewFromConfig(s.awsCfg), operator: s.inv.who.name, sourceIdentity: s.sourceIdentity}
	}
	return localIdentity{flags: &s.inv.who, getenv: s.tool.getenv, anyone: s.cmd.anyone}
}

// whoAmI establishes who makes a change.
func (s *session) whoAmI(ctx context.Context) (delivery.Actor, error) {
	return s.identifier().identify(ctx)
}

// roleAPI is what assumeRole calls: who the caller is, then the role.
type roleAPI interface {
	callerIdentityAPI
	stscreds.AssumeRoleAPIClient
}

// assumeRole returns cfg with the credentials of role and the session's
// source identity as the tool set it. An IAM user assumes it with its own
// user name as the source identity (sourceIdentityOf), which AWS keeps for
// the whole session, role chaining included, and CloudTrail records with
// every request; a role whose trust policy requires it (sts:SourceIdentity
// equal to ${aws:username}) refuses any other. Any other caller (an
// assumed role, a federated or SSO session) is not given one by the tool:
// its session name is whatever whoever assumed it chose, so AWS carries
// the session's own source identity, set by its identity provider, if it
// has one; the returned source identity is then empty.
func assumeRole(ctx context.Context, cfg aws.Config, api roleAPI, role string) (aws.Config, string, error) {
	out, err := api.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return cfg, "", fmt.Errorf("cannot establish who you are on AWS (STS GetCallerIdentity): %w; nothing was changed", err)
	}
	si, err := sourceIdentityOf(aws.ToString(out.Arn))
	if err != nil {
		return cfg, "", err
	}
	session := si
	if session == "" {
		session = roleSessionName
	}
	cfg.Credentials = aws.NewCredentialsCache(stscreds.NewAssumeRoleProvider(api, role, func(o *stscreds.AssumeRoleOptions) {
		o.RoleSessionName = session
		if si != "" {
			o.SourceIdentity = aws.String(si)
		}
	}))
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		if si == "" {
			return cfg, "", fmt.Errorf("cannot assume %s as %s, which has no source identity the tool may set (only an IAM user's name is one its owner cannot choose): %w; nothing was changed", role, aws.ToString(out.Arn), err)
		}
		return cfg, "", fmt.Errorf("cannot assume %s with source identity %q: %w; nothing was changed", role, si, err)
	}
	return cfg, si, nil
}

// roleSessionName names a session assumed without a source identity of
// the tool's making.
const roleSessionName = "oncecall-admin"

// sourceIdentityOf is the source identity the tool sets for caller arn: an
// IAM user's name (the ARN's last segment, arn:…:iam::ACCOUNT:user/[path/]NAME),
// in the characters a source identity may hold (letters, digits and
// "_+=,.@-", others dropped), at most 64. Any other caller gets "": an
// assumed role's ARN ends in a session name that whoever assumed the role
// chose, so it proves nothing.
func sourceIdentityOf(arn string) (string, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[2] != "iam" || !strings.HasPrefix(parts[5], "user/") {
		return "", nil
	}
	name := arn[strings.LastIndexAny(arn, "/:")+1:]
	var b strings.Builder
	for _, r := range name {
		if r < 0x80 && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_+=,.@-", r)) {
			b.WriteRune(r)
		}
	}
	si := b.String()
	if len(si) > 64 {
		si = si[:64]
	}
	if len(si) < 2 {
		return "", fmt.Errorf("cannot make a source identity from %q: a session needs 2 to 64 of letters, digits and _+=,.@-", arn)
	}
	return si, nil
}
