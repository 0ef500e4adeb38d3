package peers

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// GoSDKVersion is the version of github.com/modelcontextprotocol/go-sdk that
// internal/peers/gosdk/go.mod requires; keep the two in step.
const GoSDKVersion = "v1.8.0"

// gosdkDir is the module of gosdkpeer, a server on the official Go SDK, from
// the repository root. It has a go.mod of its own, so the main module's
// ./... leaves it out. Its README lists the flags and tools.
const gosdkDir = "internal/peers/gosdk"

// gosdkBuild is the binary built by the first GoSDKPeer in this process.
var gosdkBuild struct {
	once sync.Once
	path string
	err  error
}

// GoSDKPeer builds gosdkpeer, once per test process, and returns the
// absolute path of the binary. A failed build fails the test with go
// build's output: the Go toolchain and module proxy are there wherever the
// tests run, so this helper never skips.
//
// The binary goes to .cache/peers/gosdk/ under the repository root
// (ignored by git), renamed into place so that test processes building at
// once each leave a whole binary there, and one binary is all that remains
// of any number of runs. Without a writable cache it goes to a new
// directory under os.TempDir, left behind when the process exits.
func GoSDKPeer(t testing.TB) string {
	t.Helper()
	gosdkBuild.once.Do(func() { gosdkBuild.path, gosdkBuild.err = buildModule(gosdkDir, "gosdkpeer") })
	if gosdkBuild.err != nil {
		t.Fatalf("peers: building gosdkpeer: %v", gosdkBuild.err)
	}
	return gosdkBuild.path
}

// buildModule builds the program of the module in moduleDir (from the
// repository root) as exe, into .cache/peers/<the module's directory name>/
// as GoSDKPeer says.
func buildModule(moduleDir, exe string) (string, error) {
	root, err := Root()
	if err != nil {
		return "", err
	}
	if runtime.GOOS == "windows" {
		exe += ".exe"
	}
	dir := filepath.Join(root, filepath.FromSlash(cacheDir), filepath.Base(moduleDir))
	tmp, err := "", os.MkdirAll(dir, 0o755)
	if err == nil {
		tmp, err = os.MkdirTemp(dir, "build-")
	}
	shared := err == nil
	if !shared {
		// No cache: a directory of our own, which outlives the tests.
		if tmp, err = os.MkdirTemp("", exe+"-"); err != nil {
			return "", err
		}
	}
	bin := filepath.Join(tmp, exe)
	// go test puts its own toolchain first on PATH. GOWORK=off: the
	// module builds on its own go.mod and go.sum, whatever go.work is about.
	cmd := exec.Command("go", "build", "-C", filepath.Join(root, filepath.FromSlash(moduleDir)), "-buildvcs=false", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		if shared {
			os.RemoveAll(tmp)
		}
		return "", fmt.Errorf("%v\n%s", err, out)
	}
	if !shared {
		return bin, nil
	}
	final := filepath.Join(dir, exe)
	if err := os.Rename(bin, final); err != nil {
		// (Windows will not replace a binary that is running.)
		return bin, nil
	}
	os.Remove(tmp)
	return final, nil
}

// modelSDKDir is the module of modelsdkcheck, which reads the model APIs'
// tool and result formats with their official SDKs' types.
const modelSDKDir = "internal/peers/modelsdk"

var modelSDKBuild struct {
	once sync.Once
	path string
	err  error
}

// ModelSDKCheck builds modelsdkcheck, once per test process, as GoSDKPeer
// builds gosdkpeer, and returns the binary's path.
func ModelSDKCheck(t testing.TB) string {
	t.Helper()
	modelSDKBuild.once.Do(func() { modelSDKBuild.path, modelSDKBuild.err = buildModule(modelSDKDir, "modelsdkcheck") })
	if modelSDKBuild.err != nil {
		t.Fatalf("peers: building modelsdkcheck: %v", modelSDKBuild.err)
	}
	return modelSDKBuild.path
}

// GoSDK returns the command line that runs gosdkpeer over stdio in era
// ("modern": 2026-07-28 only; "dual": every version go-sdk supports) with
// any further flags, building the binary first (see GoSDKPeer). It starts
// nothing. The server writes only JSON-RPC to stdout, one line on stderr
// at start ("gosdkpeer <era> stdio pid <pid>") and SDK warnings after it,
// and exits at EOF on stdin.
func GoSDK(t testing.TB, era string, extraArgs ...string) (bin string, args []string) {
	t.Helper()
	bin = GoSDKPeer(t)
	return bin, append([]string{"-transport", "stdio", "-era", era}, extraArgs...)
}

// GoSDKHTTP starts gosdkpeer in Streamable HTTP mode (stateless, as the SDK
// serves 2026-07-28 over HTTP only so) in era, with any further flags, on a
// port of its choosing on 127.0.0.1, and returns its MCP endpoint,
// http://127.0.0.1:PORT/mcp, once it listens. A cleanup kills its process
// group and waits for it; its stderr is logged with t.Log if the test
// failed. Each call starts a server of its own.
func GoSDKHTTP(t testing.TB, era string, extraArgs ...string) (url string) {
	t.Helper()
	bin := GoSDKPeer(t)
	args := append([]string{"-transport", "http", "-era", era}, extraArgs...)
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = sysProcAttr()
	out := &tail{max: 64 << 10}
	cmd.Stderr = out
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("peers: starting gosdkpeer: %v", err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{}), out: out}
	first := make(chan string, 1)
	go func() {
		// The first line, then whatever else (nothing, by design) until
		// the process closes stdout; Wait only after the last read.
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() {
			fmt.Fprintf(out, "stdout: %s\n", sc.Text())
		}
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			t.Logf("gosdkpeer %s output:\n%s", strings.Join(args, " "), out.String())
		}
	})

	timeout := time.NewTimer(ReadyTimeout)
	defer timeout.Stop()
	select {
	case line, ok := <-first:
		if u, found := strings.CutPrefix(line, "listening on "); found && strings.HasPrefix(u, "http://") {
			return u
		}
		if !ok {
			<-p.done
			t.Fatalf("peers: gosdkpeer %s exited (%v) before listening: %s", strings.Join(args, " "), p.err, out.String())
		}
		t.Fatalf("peers: gosdkpeer %s printed %q, want \"listening on http://…\"", strings.Join(args, " "), line)
	case <-timeout.C:
		t.Fatalf("peers: gosdkpeer %s not listening after %v: %s", strings.Join(args, " "), ReadyTimeout, out.String())
	}
	return ""
}
