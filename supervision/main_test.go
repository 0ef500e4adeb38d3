package supervision

import (
	"testing"

	"go.uber.org/goleak"
)

// Every test must leave no goroutine behind: Stop joins the reaper and the
// stderr pump.
func TestMain(m *testing.M) {
	maybeHelperHost() // a subprocess of a test: never returns
	goleak.VerifyTestMain(m)
}
