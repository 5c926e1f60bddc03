// Package samtest checks the SAM application (template.yaml and the
// bootstraps `sam build` makes) against the code, in the tests of
// functions/callback and functions/deliver.
//
// Deploy evaluates template.yaml for a set of parameter values as
// CloudFormation would at deploy time: parameter constraints, Rules,
// Conditions and the intrinsic functions the template uses, keeping
// references to the stack's own resources visible ("ref:Name",
// "getatt:Name.Attr") so that tests can check which resource a policy
// statement or an environment variable names. goformation (v7.14.9) reads
// the YAML and decodes the evaluated resources with its typed models; where
// those models predate a property SAM passes through (LoggingConfig, an
// event source's FilterCriteria), the tests read the evaluated map instead.
// Env is a function's environment as deployed, LambdaEnv what the Lambda
// service adds to it, and Resolve fills in the references a test stands in
// for.
//
// Allowed lists what an IAM role allows, refusing wildcards; CheckBootstrap inspects a
// bootstrap built for provided.al2023 on arm64, and CheckMakeTarget runs a
// function's Makefile target as `sam build` does and inspects what it made.
//
// AWS stands in for AWS on loopback while a function runs: it answers
// Secrets Manager's GetSecretValue for the secrets a test gives it, passes
// DynamoDB requests to a local store (StartStore starts one, with the table
// and the demo users), refuses anything else bound off the machine and
// records every request, which DynamoGrants turns into the IAM grants they
// need.
//
// CompareShape compares a sample event's shape (its member paths and their
// JSON types, not its values) with an event `sam local generate-event`
// generated, allowing only the departures its ShapeRules name: members
// that may be omitted or added, objects whose member names are data
// (headers) and DynamoDB items. testdata/generated holds the generated
// events, which `make sam-check` regenerates with the pinned SAM CLI.
//
// WithBinaries builds, in a function's TestMain, the function's bootstrap
// for this machine and the Runtime Interface Emulator; StartEmulator runs
// that real bootstrap under the emulator with a test's environment.
//
// Nothing here reaches AWS: it reads files, evaluates them, and builds and
// runs binaries on this machine.
package samtest
