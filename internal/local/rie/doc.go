// Package rie runs a Lambda bootstrap under the AWS Lambda Runtime Interface
// Emulator (github.com/aws/aws-lambda-runtime-interface-emulator, the
// emulator `sam local invoke` runs inside its container) without Docker, and
// invokes it.
//
// The emulator and the function listen on loopback ports chosen at start,
// never the emulator's default 0.0.0.0:8080, so several can run at once. The
// function's environment is exactly the one given: nothing is inherited from
// the calling process. Each invocation's output lines (what the function
// printed between the emulator's START and END lines) are returned with its
// answer.
package rie
