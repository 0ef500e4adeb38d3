package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// logs prints what a real server wrote on its stderr, the last -n lines,
// and fails with exit 1 for a server that is not configured or has no log.
func TestLogs(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {
	  "t": {"command": "MCPTEST", "args": ["-stderr-chatter", "3"]},
	  "idle": {"command": "NOTES"}
	}}`)
	data := t.TempDir()
	if _, errOut, code := runCLIData(t, data, "call", "--config", cfg, "mcp__t__echo", `{}`); code != 0 {
		t.Fatalf("call: exit %d: %s", code, errOut)
	}
	out, errOut, code := runCLIData(t, data, "logs", "--config", cfg, "t")
	if code != 0 || !strings.Contains(out, "startup chatter 1/3") || !strings.Contains(out, "startup chatter 3/3") {
		t.Fatalf("logs t: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	last := lines(out)[len(lines(out))-1]
	out, _, code = runCLIData(t, data, "logs", "--config", cfg, "t", "-n", "1")
	if code != 0 || out != last+"\n" {
		t.Errorf("logs -n 1: exit %d, %q; want the last line %q", code, out, last)
	}
	for _, tc := range []struct{ name, want string }{
		{"nope", `no server "nope"`},
		{"idle", `server "idle" has no log yet`},
	} {
		out, errOut, code := runCLIData(t, data, "logs", "--config", cfg, tc.name)
		if code != exitFailure || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("logs %s: exit %d, stdout %q, stderr %q; want 1 and %q", tc.name, code, out, errOut, tc.want)
		}
	}
}

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

// logs -f prints the lines appended from then on, a line written in two
// pieces whole, and goes on in the new file when the log is rotated
// (renamed to .log.1, as the host does) without losing what the old one
// got last.
func TestLogsFollowRotation(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {"x": {"command": "NOTES"}}}`)
	data := t.TempDir()
	path := filepath.Join(data, "logs", "x.log")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	appendTo := func(p, s string) {
		t.Helper()
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
	}
	appendTo(path+".1", "zero\n")
	appendTo(path, "one\n")

	cmd := exec.Command(cliBin, "logs", "x", "-f", "-n", "1", "--config", cfg, "--data", data)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	got := make(chan string)
	go func() {
		defer close(got)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			got <- sc.Text()
		}
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case line, ok := <-got:
			if !ok || line != want {
				t.Fatalf("logs -f printed %q (open %v), want %q; stderr %q", line, ok, want, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("logs -f printed nothing in 30 s, want %q; stderr %q", want, stderr.String())
		}
	}
	expect("one") // -n 1: not zero, the rotated file's
	appendTo(path, "tw")
	appendTo(path, "o\n")
	expect("two")
	appendTo(path, "three\n")
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	appendTo(path, "four\n")
	expect("three")
	expect("four")
	appendTo(path, "five\n")
	expect("five")
}
