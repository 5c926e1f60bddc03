// Package apigw serves a callback.Handler behind Amazon API Gateway HTTP APIs
// (payload format 2.0) on AWS Lambda: POST /callback, GET /functions, and
// the MCP door (internal/mcp) on POST /mcp.
//
// Header names arrive lower-cased; bodies may arrive base64-encoded. The
// adapter undoes both and leaves every decision to the callback package.
package apigw
