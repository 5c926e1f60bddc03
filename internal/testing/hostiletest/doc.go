// Package hostiletest is the catalogue of hostile and broken callbacks that
// oncecall must refuse cleanly: bodies, arguments, metadata, identities and
// headers, each with the answer it must get.
//
// It is test support, like dynamotest: the callback tests send every case
// over HTTP and the apigw tests send it as an API Gateway event (as is and
// base64-encoded), and both check the status, the code, that the message
// says what to fix, that nothing was written, and that the result of an
// operation seeded by Owner is never disclosed to a caller who may not see it.
package hostiletest
