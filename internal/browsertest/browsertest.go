// Package browsertest starts a headless Chromium for the tests that drive
// the inbox page (chromedp), wherever those tests live.
package browsertest

import (
	"context"
	"os/exec"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// Chromium is the path of a Chromium-family browser, or "".
func Chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// Need returns the browser's path, or skips the test when none is
// installed; in CI, which installs Debian's chromium, it fails it instead
// (testenv.Unavailable).
func Need(t testing.TB) string {
	t.Helper()
	path := Chromium()
	if path == "" {
		testenv.Unavailable(t, "no chromium, chromium-browser or google-chrome in PATH: the inbox browser test needs one "+
			"(Debian: apt-get install chromium)")
	}
	return path
}

// Start starts a headless Chromium at path for the test, bounded by ctx,
// and returns the browser's context. It is stopped (and its profile
// removed) when the test ends, so start it after the server it visits: a
// server whose Close waits for the page's open streams then stops after
// it. Uncaught page exceptions fail the test.
func Start(t testing.TB, ctx context.Context, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Headless,
		chromedp.NoSandbox, // root in containers
		chromedp.DisableGPU,
		// The machine may have no network: keep Chromium from trying.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1100, 900),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(allocCtx, chromedp.WithLogf(t.Logf))
	// Starts the browser, so that the console is read from the first page on.
	if err := chromedp.Do(bctx); err != nil {
		cancelBrowser()
		cancelAlloc()
		t.Fatalf("starting %s: %v", path, err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var exceptions []string
	console := chromedp.Console(bctx)
	wg.Go(func() {
		for m, err := range console {
			if err != nil {
				return
			}
			if m.IsException() {
				mu.Lock()
				exceptions = append(exceptions, m.Text)
				mu.Unlock()
			}
		}
	})
	t.Cleanup(func() { // before the profile's TempDir is removed
		cancelBrowser()
		cancelAlloc()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, e := range exceptions {
			t.Errorf("page exception: %s", e)
		}
	})
	return bctx
}
