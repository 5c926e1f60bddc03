// Package httpapi serves a callback.Handler over net/http: POST /callback
// and GET /functions. It is the transport of the local server (cmd/oncecall)
// and of the end-to-end tests.
package httpapi
