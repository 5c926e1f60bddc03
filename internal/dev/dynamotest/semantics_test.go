package dynamotest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/dev/dynamotest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(dynamotest.Main(m)) }

// TestProbeKnowsTheStore measures the store: the embedded one must answer
// as minidyn is known to (the tests that ask Probe rely on it, and a new
// minidyn that answers otherwise shows up here); DYNAMODB_ENDPOINT, meant
// for DynamoDB Local or DynamoDB, must answer as DynamoDB does. The rest of
// the suite follows whatever Probe measured.
func TestProbeKnowsTheStore(t *testing.T) {
	got := dynamotest.Probe(t)
	want, store := dynamotest.Minidyn, "the embedded store (minidyn)"
	if dynamotest.External() {
		want, store = dynamotest.DynamoDB, dynamotest.EnvEndpoint+" (DynamoDB Local or DynamoDB)"
	}
	t.Logf("%s answers with %v", store, got)
	if got != want {
		t.Errorf("%s answers with %v, want %v", store, got, want)
	}
	if again := dynamotest.Probe(t); again != got {
		t.Errorf("a second probe measured %v, the first %v", again, got)
	}
}
