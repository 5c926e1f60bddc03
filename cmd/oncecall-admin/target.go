package main

import (
	"context"
	"flag"
	"io"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/auditkms"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/dynamo"
)

// Settings the tool reads besides config's (TABLE_NAME, DYNAMODB_ENDPOINT,
// AWS_REGION).
const (
	// envOperator names who makes changes when no -operator is given, on
	// stores without an AWS identity.
	envOperator = "ONCECALL_OPERATOR"
	// envDefaultRegion is the AWS CLI's other region variable, which the
	// SDK reads too.
	envDefaultRegion = "AWS_DEFAULT_REGION"
	// localRegion signs requests to stores that ignore the region.
	localRegion = "us-east-1"
	// maxOperatorBytes bounds an -operator name.
	maxOperatorBytes = 128
)

const targetUsage = `
target (which store; nothing set: the local store of make run):
  (default), -local   the local store of make run, http://127.0.0.1:8000, table oncecall
                      (TABLE_NAME or -table for another table there)
  -endpoint URL       another DynamoDB-compatible store (default $DYNAMODB_ENDPOINT);
                      table $TABLE_NAME or oncecall; on loopback any credentials do
  -aws                DynamoDB on AWS: needs TABLE_NAME (or -table: the stack's TableName
                      output), a region (AWS_REGION or -region) and AWS credentials;
                      refused while DYNAMODB_ENDPOINT is set
  -role-arn ARN       with -aws: assume this role (such as the decision role) for the
                      command, with your own AWS name as the session's source identity
`

const operatorUsage = `
who (every change is logged on standard error as one JSON line saying who made it):
  on AWS     your AWS identity (STS GetCallerIdentity); -operator adds a name beside it
  elsewhere  -operator NAME or $ONCECALL_OPERATOR is required; without it nothing is changed
`

const anyoneUsage = `
who (the change is logged on standard error as one JSON line saying who made it):
  on AWS     your AWS identity (STS GetCallerIdentity); -operator adds a name beside it
  elsewhere  -operator NAME or $ONCECALL_OPERATOR when given; not required
`

// Kinds of target.
const (
	targetLocal    = "local"
	targetEndpoint = "endpoint"
	targetAWS      = "aws"
)

// target is the store a command works on.
type target struct {
	kind     string
	endpoint string // empty for AWS
	table    string
	region   string // may be empty for AWS: the SDK's profile may give it
	// from says which setting named the endpoint: -endpoint or
	// DYNAMODB_ENDPOINT.
	from string
	// roleARN, on AWS, is a role the command assumes ("" for none).
	roleARN string
}

func (t target) String() string { return t.where() + ", table " + t.table }

// where names the store without the table.
func (t target) where() string {
	switch t.kind {
	case targetAWS:
		if t.region == "" {
			return "DynamoDB on AWS"
		}
		return "DynamoDB on AWS (" + t.region + ")"
	case targetLocal:
		return t.endpoint + " (the local store of make run)"
	}
	return t.endpoint + " (from " + t.from + ")"
}

// label is the target as the change log names it.
func (t target) label() string {
	if t.kind == targetAWS {
		return targetAWS
	}
	return t.kind + " " + t.endpoint
}

func (t target) unreachableHint() string {
	switch t.kind {
	case targetLocal:
		return "start make run in another terminal, or choose another target: -endpoint URL (or DYNAMODB_ENDPOINT) for another store, -aws for AWS"
	case targetEndpoint:
		return "check the URL given by " + t.from + " and that the store is running"
	}
	return "check your network and AWS_REGION"
}

func (t target) tableHint() string {
	switch t.kind {
	case targetAWS:
		return "set TABLE_NAME (or -table) to the stack's TableName output, and AWS_REGION to its region"
	case targetLocal:
		return "make run creates table oncecall; set TABLE_NAME (or -table) only for another table, or run oncecall-admin table create"
	}
	return "set TABLE_NAME (or -table), or create it with oncecall-admin table create"
}

// targetFlags are the flags that choose the target.
type targetFlags struct {
	aws, local              bool
	endpoint, table, region string
	roleARN                 string
}

func (f *targetFlags) declare(fs *flag.FlagSet) {
	fs.BoolVar(&f.local, "local", false, "the local store of make run (the default when nothing names another)")
	fs.StringVar(&f.endpoint, "endpoint", "", "another DynamoDB-compatible store's URL (default $DYNAMODB_ENDPOINT)")
	fs.BoolVar(&f.aws, "aws", false, "DynamoDB on AWS (needs TABLE_NAME and a region)")
	fs.StringVar(&f.table, "table", "", "table name (default $TABLE_NAME; oncecall except on AWS)")
	fs.StringVar(&f.region, "region", "", "AWS region (default $AWS_REGION)")
	fs.StringVar(&f.roleARN, "role-arn", "", "with -aws: a role to assume, with your AWS name as its session's source identity")
}

// resolve decides the target from the flags and the environment, without
// any I/O, refusing every combination that could reach another store than
// the one meant.
func (f *targetFlags) resolve(getenv func(string) string, localEndpoint string) (target, error) {
	envEndpoint := getenv(config.EnvEndpoint)
	chosen := 0
	for _, b := range []bool{f.aws, f.local, f.endpoint != ""} {
		if b {
			chosen++
		}
	}
	if chosen > 1 {
		return target{}, usageError("choose one target: -local, -endpoint URL or -aws")
	}
	if f.roleARN != "" && !f.aws {
		return target{}, usageError("-role-arn assumes a role on AWS: it goes with -aws")
	}
	t := target{table: f.table, region: f.region, roleARN: f.roleARN}
	if t.table == "" {
		t.table = getenv(config.EnvTable)
	}
	if t.region == "" {
		t.region = getenv(config.EnvRegion)
	}
	if f.aws {
		if envEndpoint != "" {
			return target{}, usageError("-aws asks for DynamoDB on AWS, but %s=%s names another store: unset %s (or drop -aws)", config.EnvEndpoint, envEndpoint, config.EnvEndpoint)
		}
		if t.table == "" {
			return target{}, usageError("-aws needs the table: set %s (or -table) to the stack's TableName output", config.EnvTable)
		}
		if t.region == "" {
			t.region = getenv(envDefaultRegion)
		}
		t.kind = targetAWS
		return t, nil
	}
	if t.table == "" {
		t.table = config.Defaults.Table
	}
	if t.region == "" {
		t.region = localRegion
	}
	t.kind, t.endpoint, t.from = targetEndpoint, f.endpoint, "-endpoint"
	if t.endpoint == "" && !f.local {
		t.endpoint, t.from = envEndpoint, config.EnvEndpoint
	}
	if f.local && envEndpoint != "" && envEndpoint != localEndpoint {
		return target{}, usageError("-local asks for the local store %s, but %s=%s names another: unset %s (or drop -local)", localEndpoint, config.EnvEndpoint, envEndpoint, config.EnvEndpoint)
	}
	if t.endpoint == "" || t.endpoint == localEndpoint {
		t.kind, t.endpoint, t.from = targetLocal, localEndpoint, ""
		return t, nil
	}
	return t, checkEndpoint(t.endpoint, t.from)
}

// checkEndpoint refuses what is not a store's URL, and AWS's own DynamoDB
// endpoints, which must be reached with -aws so that the tool knows it is
// on AWS (identity, messages).
func checkEndpoint(endpoint, from string) error {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError("%s=%q is not an http:// or https:// URL", from, endpoint)
	}
	host := strings.ToLower(u.Hostname())
	for _, suffix := range []string{".amazonaws.com", ".amazonaws.com.cn", ".api.aws"} {
		if strings.HasSuffix(host, suffix) {
			return usageError("%s=%s is DynamoDB on AWS: use -aws (with TABLE_NAME and AWS_REGION) and leave %s unset", from, endpoint, config.EnvEndpoint)
		}
	}
	return nil
}

// operatorFlags name who makes a change where no AWS identity says it.
type operatorFlags struct {
	name string
}

// declare declares -operator; optional says it is not required off AWS.
func (f *operatorFlags) declare(fs *flag.FlagSet, optional bool) {
	usage := "who makes the change, for the log (default $ONCECALL_OPERATOR; required except on AWS)"
	if optional {
		usage = "who makes the change, for the log (default $ONCECALL_OPERATOR; optional)"
	}
	fs.StringVar(&f.name, "operator", "", usage)
}

// local returns the operator's name off AWS: -operator, else
// $ONCECALL_OPERATOR; without either, "" when optional, else a usage
// error.
func (f *operatorFlags) local(getenv func(string) string, optional bool) (string, error) {
	name, from := f.name, "-operator"
	if name == "" {
		name, from = getenv(envOperator), envOperator
	}
	if name == "" && optional {
		return "", nil
	}
	if name == "" {
		return "", usageError("a change needs to know who makes it: pass -operator NAME or set %s (on AWS your AWS identity is used); nothing was changed", envOperator)
	}
	return name, checkOperator(name, from)
}

func checkOperator(name, from string) error {
	if len(name) > maxOperatorBytes || !utf8.ValidString(name) || strings.TrimSpace(name) != name ||
		strings.IndexFunc(name, unicode.IsControl) >= 0 {
		return usageError("%s must be a name of 1 to %d bytes, without control characters or surrounding spaces", from, maxOperatorBytes)
	}
	return nil
}

// session is one command's connection to its target.
type session struct {
	tool   *tool
	cmd    *command
	out    io.Writer
	json   bool
	target target
	admin  *dynamo.Admin
	tables dynamo.TableAPI
	awsCfg aws.Config
	inv    invocation
	// sourceIdentity is the source identity of the role session the
	// command assumed (-role-arn), "" without one.
	sourceIdentity string
	// audit is the audit key, nil when none was given (auditKey).
	audit *auditkms.Key
	close func()
}

// open connects to the command's target: credentials and a client for it,
// and, for a change on AWS, the caller's identity.
func (t *tool) open(ctx context.Context, cmd *command, inv invocation) (*session, error) {
	tg, err := inv.target.resolve(t.getenv, t.localEndpoint)
	if err != nil {
		return nil, err
	}
	var cfg aws.Config
	var sourceIdentity string
	switch {
	case tg.kind != targetAWS && app.IsLoopback(tg.endpoint):
		cfg = dynamo.LocalConfig(tg.region)
	default:
		opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithHTTPClient(dynamo.BuildableHTTPClient())}
		if tg.region != "" {
			opts = append(opts, awsconfig.WithRegion(tg.region))
		}
		if cfg, err = awsconfig.LoadDefaultConfig(ctx, opts...); err != nil {
			return nil, usageError("AWS configuration for %s: %w", tg.where(), err)
		}
		if cfg.Region == "" {
			return nil, usageError("%s needs a region: set %s (or -region)", tg.where(), config.EnvRegion)
		}
		tg.region = cfg.Region
		if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
			return nil, usageError("%s needs AWS credentials: set AWS_PROFILE, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (%v)", tg.where(), err)
		}
		if tg.roleARN != "" {
			if cfg, sourceIdentity, err = assumeRole(ctx, cfg, sts.NewFromConfig(cfg), tg.roleARN); err != nil {
				return nil, err
			}
		}
	}
	client := dynamodb.NewFromConfig(cfg, dynamo.Options(tg.endpoint))
	s := &session{
		tool: t, cmd: cmd, out: t.stdout, json: inv.json, target: tg,
		tables: client, awsCfg: cfg, inv: inv, sourceIdentity: sourceIdentity,
		close: func() {
			if c, ok := cfg.HTTPClient.(interface{ CloseIdleConnections() }); ok {
				c.CloseIdleConnections()
			}
		},
	}
	if err := s.auditKey(cfg); err != nil {
		return nil, err
	}
	var opts []dynamo.AdminOption
	if t.pageSize > 0 {
		opts = append(opts, dynamo.WithPageSize(t.pageSize))
	}
	if s.audit != nil && cmd.change {
		opts = append(opts, dynamo.WithProver(s.audit))
	}
	s.admin = dynamo.NewAdmin(client, tg.table, opts...)
	return s, nil
}
