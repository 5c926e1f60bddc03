// Package apigw adapts Amazon API Gateway HTTP API events (payload format
// 2.0) on AWS Lambda to an http.Handler, the router of package httpapi:
// each event becomes an *http.Request, and what the handler writes becomes
// the event's response.
//
// It is the only place that knows the event's shape: header names arrive
// lower-cased and repeated headers joined with commas, bodies may arrive
// base64-encoded, and the path carries the stage. Every decision about the
// request is the handler's.
package apigw
