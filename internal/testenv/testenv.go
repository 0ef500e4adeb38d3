// Package testenv decides what a test does when something it needs from
// the machine is missing: a program (etcd, sshd, Chromium), the npm peers
// of `make peers`, root. On a developer's machine the test skips, saying
// what to install; in CI, which installs everything (.ci/run), it fails,
// so that a broken CI image shows as red rather than as a quiet skip.
//
//	bin, err := exec.LookPath("etcd")
//	if err != nil {
//		testenv.Unavailable(t, "no etcd in PATH (Debian: apt-get install etcd-server)")
//	}
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// CI reports whether the tests run in CI: the environment variable CI is
// set to anything but "", "0" or "false" (GitHub Actions, GitLab CI and
// .ci/run set CI=true).
func CI() bool {
	switch os.Getenv("CI") {
	case "", "0", "false":
		return false
	}
	return true
}

// Unavailable ends t for want of a prerequisite: it skips t with the
// message, or, when CI reports true, fails it with the message. The
// message should say what to install. Like t.Skip and t.Fatal it must be
// called from the test's goroutine, and does not return.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if CI() {
		t.Fatal(msg + " (CI is set, and the CI machine must provide it: see .ci/run)")
	}
	t.Skip(msg)
}
