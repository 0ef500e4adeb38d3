package testenv

import (
	"runtime"
	"testing"
)

func TestCI(t *testing.T) {
	for _, c := range []struct {
		value string
		want  bool
	}{
		{"", false}, {"0", false}, {"false", false},
		{"true", true}, {"1", true}, {"yes", true},
	} {
		t.Setenv("CI", c.value)
		if got := CI(); got != c.want {
			t.Errorf("CI=%q: CI() = %v, want %v", c.value, got, c.want)
		}
	}
}

// recorder is a testing.TB that records whether Unavailable skipped or
// failed it. Skip and Fatal stop the calling goroutine as the real ones do.
type recorder struct {
	testing.TB
	skipped, failed bool
}

func (r *recorder) Helper()      {}
func (r *recorder) Skip(...any)  { r.skipped = true; runtime.Goexit() }
func (r *recorder) Fatal(...any) { r.failed = true; runtime.Goexit() }

func TestUnavailable(t *testing.T) {
	for _, c := range []struct {
		ci                   string
		wantSkip, wantFailed bool
	}{
		{"", true, false},
		{"true", false, true},
	} {
		t.Setenv("CI", c.ci)
		r := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			Unavailable(r, "no %s in PATH", "etcd")
		}()
		<-done
		if r.skipped != c.wantSkip || r.failed != c.wantFailed {
			t.Errorf("CI=%q: skipped %v, failed %v; want %v, %v", c.ci, r.skipped, r.failed, c.wantSkip, c.wantFailed)
		}
	}
}
