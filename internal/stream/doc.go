// Package stream serves the delivery worker's Lambda event sources: batches
// of records from the table's DynamoDB stream (the first attempt of each
// new ticket) and the scheduled event that runs the sweep (due retries and
// what the stream path left). Like apigw for the callback, it only turns
// events into calls of the delivery package and reports what failed.
package stream
