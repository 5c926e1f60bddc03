package dynamo_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// TestMain fails the package when a goroutine outlives its tests: servers,
// connections and retries must all end with the calls that started them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(dynamotest.Main(m)) }
