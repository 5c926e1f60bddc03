package metrics

import (
	"encoding/json"
	"io"
	"slices"
	"sync"
	"time"
)

// Metric names besides the outcomes.
const (
	// Calls is 1 on every line.
	Calls = "calls"
	// Latency is the call's duration in milliseconds.
	Latency = "latency"
	// Dimension names the dimension every metric carries.
	Dimension = "FunctionName"
)

// EMF writes one Embedded Metric Format line per observation. It is safe
// for concurrent use; each line is written with a single Write call.
type EMF struct {
	w         io.Writer
	namespace string
	service   string
	outcomes  []string
	now       func() time.Time

	mu  sync.Mutex
	buf []byte
}

// Option configures an EMF recorder.
type Option func(*EMF)

// WithClock sets the clock stamped on each line (time.Now by default).
func WithClock(now func() time.Time) Option {
	return func(e *EMF) { e.now = now }
}

// New returns an EMF recorder writing to w, in CloudWatch namespace
// namespace, with service (the Lambda function name) as the dimension
// value. outcomes are the outcome metrics every line carries.
func New(w io.Writer, namespace, service string, outcomes []string, opts ...Option) *EMF {
	if service == "" {
		service = "oncecall"
	}
	e := &EMF{w: w, namespace: namespace, service: service, outcomes: slices.Clone(outcomes), now: time.Now}
	for _, o := range opts {
		o(e)
	}
	return e
}

type metricDef struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type directive struct {
	Namespace  string      `json:"Namespace"`
	Dimensions [][]string  `json:"Dimensions"`
	Metrics    []metricDef `json:"Metrics"`
}

type metadata struct {
	Timestamp         int64       `json:"Timestamp"`
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Observe writes the line for one call. An outcome that is not one of the
// recorder's outcomes still counts in Calls and Latency. Write errors are
// dropped: metrics never fail a call.
func (e *EMF) Observe(function, outcome string, status int, d time.Duration) {
	defs := make([]metricDef, 0, len(e.outcomes)+2)
	line := make(map[string]any, len(e.outcomes)+8)
	for _, o := range e.outcomes {
		defs = append(defs, metricDef{Name: o, Unit: "Count"})
		v := 0
		if o == outcome {
			v = 1
		}
		line[o] = v
	}
	defs = append(defs, metricDef{Name: Calls, Unit: "Count"}, metricDef{Name: Latency, Unit: "Milliseconds"})
	line[Calls] = 1
	line[Latency] = ms(d)
	line["outcome"] = outcome
	line["status"] = status
	if function != "" {
		line["function"] = function
	}
	e.emit(line, defs)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// emit stamps line with its metadata, naming defs as its metrics, and
// writes it with one Write call.
func (e *EMF) emit(line map[string]any, defs []metricDef) {
	line[Dimension] = e.service
	line["_aws"] = metadata{
		Timestamp: e.now().UnixMilli(),
		CloudWatchMetrics: []directive{{
			Namespace: e.namespace, Dimensions: [][]string{{Dimension}}, Metrics: defs,
		}},
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	b, err := json.Marshal(line)
	if err != nil {
		return
	}
	e.buf = append(append(e.buf[:0], b...), '\n')
	_, _ = e.w.Write(e.buf)
}
