package dynamotest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(dynamotest.Main(m)) }
