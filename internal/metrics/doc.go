// Package metrics turns the callback handler's per-call observations into
// CloudWatch Embedded Metric Format (EMF) lines.
//
// One JSON line is written per call. CloudWatch Logs extracts the metrics
// from it; on Lambda, writing the line to standard output is all it takes,
// with no API call and no extra permission. Every line carries every
// outcome metric, 1 for the call's outcome and 0 for the others, so sums
// are call counts, averages are rates (the average of "busy" is the busy
// rate) and no metric is ever missing from a period that had calls.
//
// The only dimension is the Lambda function name, so metric count and cost
// are fixed: the function and outcome of a call are plain properties of the
// line, searchable in Logs Insights, never dimensions that a caller could
// multiply.
package metrics
