package oauth

import "time"

// SetWaitPoll has a's sign-ins with a code wait through f instead of a
// timer.
func SetWaitPoll(a *Authorizer, f func(done <-chan struct{}, d time.Duration) bool) { a.waitPoll = f }
