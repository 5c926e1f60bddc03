package dynamo

import (
	"context"
	"encoding/json"
	"io"
	"maps"
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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
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
// request whose input has a ReturnConsumedCapacity field asks for INDEXES
// (see AskCapacity), so every answer says what the call consumed, table and
// index by index; every request body is handed to the transport as a copy
// (see ownBody); and an endpoint, when not empty, replaces AWS's.
func Options(endpoint string) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.RetryMaxAttempts = 1
		o.APIOptions = append(o.APIOptions, AskCapacity)
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
// all and per operation; sums, per operation, the capacity the answers
// report (see Capacity); and notes every request of an operation that takes
// ReturnConsumedCapacity whose body does not ask for INDEXES. It is safe for
// concurrent use.
type Counter struct {
	n atomic.Int64

	mu      sync.Mutex
	ops     map[string]int64
	units   map[string]Capacity
	unasked map[string]int64
}

// Load returns the count.
func (c *Counter) Load() int64 { return c.n.Load() }

// Operations returns the count per operation name, such as
// "TransactWriteItems".
func (c *Counter) Operations() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.ops)
}

// Capacity returns, per operation name, the capacity the answers reported
// since the last Reset.
func (c *Counter) Capacity() map[string]Capacity {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Capacity, len(c.units))
	for k, v := range c.units {
		out[k] = v.Add(Capacity{})
	}
	return out
}

// Unasked returns, per operation name, how many requests whose operation
// takes ReturnConsumedCapacity were sent without asking for INDEXES, since
// the Counter was made: Reset does not clear it, so that a check at the end
// of a test sees every request.
func (c *Counter) Unasked() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.unasked)
}

// Reset sets the counts and the capacity to zero.
func (c *Counter) Reset() {
	c.mu.Lock()
	c.n.Store(0)
	c.ops = nil
	c.units = nil
	c.mu.Unlock()
}

func (c *Counter) add(op string, asked bool, got Capacity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n.Add(1)
	if c.ops == nil {
		c.ops = map[string]int64{}
		c.units = map[string]Capacity{}
	}
	c.ops[op]++
	c.units[op] = c.units[op].Add(got)
	if TakesCapacity(op) && !asked {
		if c.unasked == nil {
			c.unasked = map[string]int64{}
		}
		c.unasked[op]++
	}
}

// Count returns a client option that, for every request the client sends
// over the wire, adds one to c, reads the request body for its
// ReturnConsumedCapacity and adds the capacity of the answer.
func (c *Counter) Count() func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("oncecallCountRequests",
				func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
					op := awsmiddleware.GetOperationName(ctx)
					asked := asksIndexes(in.Request)
					out, md, err := next.HandleFinalize(ctx, in)
					c.add(op, asked, Consumed(op, consumedOf(out.Result)))
					return out, md, err
				}), middleware.After)
		})
	}
}

// asksIndexes reports whether the body of the signed request req says
// "ReturnConsumedCapacity":"INDEXES". It reads the body and rewinds it.
func asksIndexes(req any) bool {
	r, ok := req.(*smithyhttp.Request)
	if !ok || !r.IsStreamSeekable() || r.GetStream() == nil {
		return false
	}
	body, err := io.ReadAll(r.GetStream())
	if rerr := r.RewindStream(); err != nil || rerr != nil {
		return false
	}
	var in struct{ ReturnConsumedCapacity string }
	if json.Unmarshal(body, &in) != nil {
		return false
	}
	return in.ReturnConsumedCapacity == string(types.ReturnConsumedCapacityIndexes)
}
