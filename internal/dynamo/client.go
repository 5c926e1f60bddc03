package dynamo

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// Connection limits of the HTTP client oncecall gives the SDK.
const (
	// DialTimeout bounds connecting to the store.
	DialTimeout = 2 * time.Second
	// MaxIdleConns keeps warm connections for concurrent calls.
	MaxIdleConns = 64
)

// HTTPClient returns the HTTP client for the DynamoDB SDK: bounded dials and
// enough idle connections that concurrent calls reuse them.
func HTTPClient() *http.Client {
	d := &net.Dialer{}
	tuneDialer(d)
	tr := &http.Transport{Proxy: http.ProxyFromEnvironment, DialContext: d.DialContext}
	tuneTransport(tr)
	return &http.Client{Transport: tr}
}

// BuildableHTTPClient is HTTPClient in the form the SDK's configuration
// loader can still adjust: with AWS_CA_BUNDLE set, LoadDefaultConfig adds
// the bundle's roots to the client's transport and refuses any client that
// is not an awshttp.BuildableClient. Use it with LoadDefaultConfig.
func BuildableHTTPClient() *awshttp.BuildableClient {
	return awshttp.NewBuildableClient().WithDialerOptions(tuneDialer).WithTransportOptions(tuneTransport)
}

// tuneDialer and tuneTransport hold the settings both clients share.
func tuneDialer(d *net.Dialer) {
	d.Timeout, d.KeepAlive = DialTimeout, 30*time.Second
}

func tuneTransport(tr *http.Transport) {
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = MaxIdleConns, MaxIdleConns
	tr.IdleConnTimeout = 90 * time.Second
	tr.TLSHandshakeTimeout = DialTimeout
	tr.ExpectContinueTimeout = time.Second
	tr.ForceAttemptHTTP2 = true
}

// Options configures the SDK client for a Store: the SDK's own retries are
// off, because the Store spends its own, named, budget (MaxAttempts); every
// request body is handed to the transport as a copy (see ownBody); and an
// endpoint, when not empty, replaces AWS's.
func Options(endpoint string) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.RetryMaxAttempts = 1
		o.HTTPClient = withOwnBody(o.HTTPClient)
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
	}
}

// LocalConfig is an aws.Config for a DynamoDB-compatible server that ignores
// credentials, such as the embedded one.
func LocalConfig(region string) aws.Config {
	if region == "" {
		region = "us-east-1"
	}
	return aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		HTTPClient:  HTTPClient(),
	}
}

// Counter counts the HTTP requests a client sends, retries included, in
// all and per operation. It is safe for concurrent use.
type Counter struct {
	n atomic.Int64

	mu  sync.Mutex
	ops map[string]int64
}

// Load returns the count.
func (c *Counter) Load() int64 { return c.n.Load() }

// Operations returns the count per operation name, such as
// "TransactWriteItems".
func (c *Counter) Operations() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int64, len(c.ops))
	for k, v := range c.ops {
		out[k] = v
	}
	return out
}

// Reset sets the counts to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.n.Store(0)
	c.ops = nil
	c.mu.Unlock()
}

func (c *Counter) add(op string) {
	c.mu.Lock()
	c.n.Add(1)
	if c.ops == nil {
		c.ops = map[string]int64{}
	}
	c.ops[op]++
	c.mu.Unlock()
}

// Count returns a client option that adds one to c for every request the
// client sends over the wire.
func (c *Counter) Count() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("oncecallCountRequests",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					c.add(awsmiddleware.GetOperationName(ctx))
					return next.HandleFinalize(ctx, in)
				}), middleware.After)
		})
	}
}
