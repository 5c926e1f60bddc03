// Command hello is the smallest aws-lambda-go function: the baseline that
// oncecall's cold start is measured against under the Runtime Interface
// Emulator (internal/bench/cmd/oncecall-bench). It is built with the same flags as
// oncecall's bootstrap.
package main

import "github.com/aws/aws-lambda-go/lambda"

func main() {
	lambda.Start(func() (string, error) { return "hello", nil })
}
