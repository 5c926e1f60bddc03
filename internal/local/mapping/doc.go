// Package mapping runs, on this machine, what AWS runs between the table's
// DynamoDB stream and the delivery worker: the Lambda event source mapping
// and the schedule that template.yaml declares for DeliverFunction.
//
// Read takes the settings from the template itself (one reading of it, so
// the local path cannot drift from what is deployed): the stream's view
// type, the mapping's BatchSize, StartingPosition, FilterCriteria,
// FunctionResponseTypes, BisectBatchOnFunctionError, MaximumRetryAttempts,
// MaximumRecordAgeInSeconds and on-failure destination, and the sweep's
// rate. A Mapping then reads the stream as the event source mapping does
// (DescribeStream, GetShardIterator, GetRecords, at most BatchSize records
// a batch), turns records into the events.DynamoDBEvent Lambda hands the
// function, drops those the filter does not match (MatchFilter), calls the
// function's handler and honours its answer: a partial batch response
// resumes from the lowest failed sequence number, a function error retries
// the batch (bisected when the template says so), and a record past its
// retries or its age goes to the on-failure destination, which here is a
// log line with what the queue message would carry. A Schedule invokes the
// same handler with a scheduled event at the template's rate.
//
// Departures from AWS, each on purpose: one batch at a time per shard,
// whatever the template's ParallelizationFactor (per-ticket order holds
// either way); polling every PollInterval; the
// on-failure destination is the log; and retries wait RetryBackoff, not
// Lambda's own schedule.
package mapping
