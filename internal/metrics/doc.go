// Package metrics writes oncecall's CloudWatch metrics as Embedded Metric
// Format (EMF) lines: one per call the callback handler answers (Observe:
// the call's outcome, status and latency), one per delivery attempt of the
// worker (Attempt: its outcome, duration, the ticket's delivery latency and
// whether the credentials were refused) and one per sweep (Backlog: the
// deliveries queued for a retry, uncertain and failed, and how long the
// oldest queued one has waited).
//
// CloudWatch Logs extracts the metrics from each line; on Lambda, writing
// the line to standard output is all it takes, with no API call and no
// extra permission. Every call's and every attempt's line carries every
// outcome metric, 1 for its outcome and 0 for the others, so sums are
// counts, averages are rates (the average of "busy" is the busy rate) and
// no metric is ever missing from a period that had calls or attempts.
//
// The only dimension is the Lambda function name, so metric count and cost
// are fixed: the function and outcome of a call are plain properties of the
// line, searchable in Logs Insights, never dimensions that a caller could
// multiply.
package metrics
