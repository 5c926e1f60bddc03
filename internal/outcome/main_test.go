package outcome_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// TestMain fails the package when a goroutine outlives its tests, after
// stopping the embedded store they shared.
func TestMain(m *testing.M) { goleak.VerifyTestMain(dynamotest.Main(m)) }
