package mapping

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/awslabs/goformation/v7/intrinsics"

	"github.com/oncecall/oncecall/internal/local/localdb"
)

// Lambda's bounds and defaults for a DynamoDB event source mapping.
const (
	// DefaultBatchSize is the BatchSize of a mapping that sets none.
	DefaultBatchSize = 100
	// MaxBatchSize is the largest BatchSize Lambda takes for DynamoDB.
	MaxBatchSize = 10000
	// MaxParallelization is the largest ParallelizationFactor.
	MaxParallelization = 10
)

// Settings are the stream, mapping and schedule settings of one function,
// as the template declares them.
type Settings struct {
	// StreamViewType is the table's StreamSpecification.StreamViewType.
	StreamViewType string
	// BatchSize is the most records one invocation gets.
	BatchSize int
	// Parallelization is the ParallelizationFactor: how many batches of a
	// shard Lambda runs at once (the local Mapping runs one at a time).
	Parallelization int
	// StartingPosition is TRIM_HORIZON or LATEST.
	StartingPosition string
	// Filters are the FilterCriteria patterns; a record is delivered when
	// any matches (none: every record).
	Filters []string
	// ReportBatchItemFailures: the handler answers the records that failed.
	ReportBatchItemFailures bool
	// BisectOnError splits a batch in two when the function fails.
	BisectOnError bool
	// MaxRetries bounds the retries of a record (-1: until it expires).
	MaxRetries int
	// MaxRecordAge is how old a record may be before it is given up (0:
	// no limit short of the stream's 24 hours).
	MaxRecordAge time.Duration
	// OnFailure names the on-failure destination's type (SQS, SNS, S3),
	// "" without one.
	OnFailure string
	// SweepEvery is the rate of the function's Schedule event (0: none).
	SweepEvery time.Duration
}

// Read reads the settings of function's DynamoDB event and Schedule event,
// and the stream of the table the event reads, from the SAM template at
// path. Conditions are taken as holding: these resources exist only when
// the stack delivers, which is when a local run asks for them.
func Read(path, function string) (Settings, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return Settings{}, err
	}
	long, err := intrinsics.ProcessYAML(src, &intrinsics.ProcessorOptions{NoProcess: true})
	if err != nil {
		return Settings{}, fmt.Errorf("mapping: read %s: %w", path, err)
	}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(long, &tpl); err != nil {
		return Settings{}, fmt.Errorf("mapping: read %s: %w", path, err)
	}
	fn, ok := tpl.Resources[function]
	if !ok {
		return Settings{}, fmt.Errorf("mapping: %s has no resource %s", path, function)
	}
	var evs map[string]struct {
		Type       string
		Properties json.RawMessage
	}
	if err := json.Unmarshal(fn.Properties["Events"], &evs); err != nil {
		return Settings{}, fmt.Errorf("mapping: %s.Events: %w", function, err)
	}
	var s Settings
	var streamOf string
	found := false
	for name, ev := range evs {
		switch ev.Type {
		case "DynamoDB":
			if found {
				return Settings{}, fmt.Errorf("mapping: %s has more than one DynamoDB event", function)
			}
			found = true
			if streamOf, err = s.readStreamEvent(ev.Properties); err != nil {
				return Settings{}, fmt.Errorf("mapping: %s.Events.%s: %w", function, name, err)
			}
		case "Schedule":
			var p struct{ Schedule string }
			if err := json.Unmarshal(ev.Properties, &p); err != nil {
				return Settings{}, fmt.Errorf("mapping: %s.Events.%s: %w", function, name, err)
			}
			if s.SweepEvery, err = Rate(p.Schedule); err != nil {
				return Settings{}, fmt.Errorf("mapping: %s.Events.%s: %w", function, name, err)
			}
		}
	}
	if !found {
		return Settings{}, fmt.Errorf("mapping: %s has no DynamoDB event", function)
	}
	table, ok := tpl.Resources[streamOf]
	if !ok {
		return Settings{}, fmt.Errorf("mapping: the stream event reads %q, which is not a resource", streamOf)
	}
	var spec struct{ StreamViewType string }
	if err := json.Unmarshal(ifTrue(table.Properties["StreamSpecification"]), &spec); err != nil || spec.StreamViewType == "" {
		return Settings{}, fmt.Errorf("mapping: %s has no StreamSpecification.StreamViewType", streamOf)
	}
	s.StreamViewType = spec.StreamViewType
	return s, nil
}

func (s *Settings) readStreamEvent(raw json.RawMessage) (string, error) {
	var p struct {
		Stream                     map[string]json.RawMessage `json:"Stream"`
		BatchSize                  *int
		StartingPosition           string
		FilterCriteria             struct{ Filters []struct{ Pattern string } }
		FunctionResponseTypes      []string
		BisectBatchOnFunctionError bool
		MaximumRetryAttempts       *int
		MaximumRecordAgeInSeconds  *int
		ParallelizationFactor      *int
		DestinationConfig          struct{ OnFailure struct{ Type string } }
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return "", err
	}
	var att []string
	if raw := p.Stream["Fn::GetAtt"]; json.Unmarshal(raw, &att) != nil {
		var dotted string
		_ = json.Unmarshal(raw, &dotted)
		att = strings.SplitN(dotted, ".", 2)
	}
	if len(att) != 2 || att[1] != "StreamArn" {
		return "", errors.New("Stream is not !GetAtt <table>.StreamArn")
	}
	// Lambda's defaults where the template is silent.
	s.BatchSize, s.MaxRetries = DefaultBatchSize, -1
	if p.BatchSize != nil {
		s.BatchSize = *p.BatchSize
	}
	if s.BatchSize < 1 || s.BatchSize > MaxBatchSize {
		return "", fmt.Errorf("BatchSize %d is outside 1..%d", s.BatchSize, MaxBatchSize)
	}
	s.Parallelization = 1
	if p.ParallelizationFactor != nil {
		s.Parallelization = *p.ParallelizationFactor
	}
	if s.Parallelization < 1 || s.Parallelization > MaxParallelization {
		return "", fmt.Errorf("ParallelizationFactor %d is outside 1..%d", s.Parallelization, MaxParallelization)
	}
	s.StartingPosition = p.StartingPosition
	if s.StartingPosition != "TRIM_HORIZON" && s.StartingPosition != "LATEST" {
		return "", fmt.Errorf("StartingPosition %q", s.StartingPosition)
	}
	for _, f := range p.FilterCriteria.Filters {
		s.Filters = append(s.Filters, f.Pattern)
	}
	for _, t := range p.FunctionResponseTypes {
		if t == "ReportBatchItemFailures" {
			s.ReportBatchItemFailures = true
		}
	}
	s.BisectOnError = p.BisectBatchOnFunctionError
	if p.MaximumRetryAttempts != nil {
		s.MaxRetries = *p.MaximumRetryAttempts
	}
	if p.MaximumRecordAgeInSeconds != nil && *p.MaximumRecordAgeInSeconds > 0 {
		s.MaxRecordAge = time.Duration(*p.MaximumRecordAgeInSeconds) * time.Second
	}
	s.OnFailure = p.DestinationConfig.OnFailure.Type
	return att[0], nil
}

// ifTrue takes the true branch of an Fn::If, or returns v as it is.
func ifTrue(v json.RawMessage) json.RawMessage {
	var f struct {
		If []json.RawMessage `json:"Fn::If"`
	}
	if json.Unmarshal(v, &f) == nil && len(f.If) == 3 {
		return f.If[1]
	}
	return v
}

var rateExpr = regexp.MustCompile(`^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$`)

// Rate is the period of an EventBridge rate expression such as
// "rate(1 minute)". Cron expressions are refused.
func Rate(expr string) (time.Duration, error) {
	m := rateExpr.FindStringSubmatch(expr)
	if m == nil {
		return 0, fmt.Errorf("schedule %q is not rate(N unit)", expr)
	}
	n, _ := strconv.Atoi(m[1])
	if n < 1 || (n == 1) != (m[2] == "minute" || m[2] == "hour" || m[2] == "day") {
		return 0, fmt.Errorf("schedule %q: EventBridge wants a singular unit for 1 and a plural one otherwise", expr)
	}
	unit := map[byte]time.Duration{'m': time.Minute, 'h': time.Hour, 'd': 24 * time.Hour}[m[2][0]]
	return time.Duration(n) * unit, nil
}

// FindTemplate returns template.yaml of the repository that holds the
// working directory: the first one found from there up to the folder with
// go.mod.
func FindTemplate() (string, error) {
	if p, ok := localdb.RepoFile("template.yaml"); ok {
		return p, nil
	}
	return "", errors.New("mapping: no template.yaml in or above the working directory: run from the repository or pass -template")
}
