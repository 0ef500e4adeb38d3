package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestFormatSysinfo(t *testing.T) {
	out := `@@hostname
web1
@@os
NAME="Debian GNU/Linux"
PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"
@@kernel
6.1.0-18-amd64
@@uptime
273600.51 1000.00
@@load
0.15 0.10 0.05 1/123 4567
@@meminfo
MemTotal:        8000000 kB
MemFree:         1000000 kB
MemAvailable:    6000000 kB
SwapTotal:             0 kB
@@df
Filesystem     1024-blocks     Used Available Capacity Mounted on
/dev/sda1         20000000 10000000   9000000      53% /
`
	want := `hostname: web1
os: Debian GNU/Linux 12 (bookworm)
kernel: 6.1.0-18-amd64
uptime: 3d 4h 0m
load: 0.15 0.10 0.05 (1, 5, 15 min)
memory: 1.9 GiB used of 7.6 GiB (5.7 GiB available)
disk /: 9.5 GiB used of 19.1 GiB (53%), 8.6 GiB available, on /dev/sda1`
	if got := formatSysinfo(out); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := formatSysinfo("@@hostname\nh\n"); !strings.Contains(got, "os: unknown") {
		t.Errorf("missing facts not marked unknown:\n%s", got)
	}
}

func TestSystemdCommand(t *testing.T) {
	cmd, err := systemdCommand("restart", "nginx; rm -rf /", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(cmd, "systemctl restart -- 'nginx; rm -rf /'") {
		t.Errorf("unit not quoted: %s", cmd)
	}
	cmd, _ = systemdCommand("logs", "ssh", 0)
	if !strings.Contains(cmd, "journalctl --no-pager -n 50 -u 'ssh'") {
		t.Errorf("logs: %s", cmd)
	}
	if _, err := systemdCommand("status", "", 0); err == nil {
		t.Errorf("status without unit accepted")
	}
	if _, err := systemdCommand("list", "", 0); err != nil {
		t.Errorf("list without unit: %v", err)
	}
	if _, err := systemdCommand("reboot", "x", 0); err == nil {
		t.Errorf("unknown action accepted")
	}
	if why, ok := systemdAbsent(noSystemdMarker + ": no systemctl\n"); !ok || why != "no systemctl" {
		t.Errorf("systemdAbsent = %q, %v", why, ok)
	}
	if _, ok := systemdAbsent("Unit foo.service could not be found.\n"); ok {
		t.Errorf("a missing unit taken for missing systemd")
	}
}

func TestSudoWrap(t *testing.T) {
	a := Alias{Name: "web", Sudo: sudoNopasswd}
	cmd, pw, err := sudoWrap(a, "id -u", "")
	if err != nil || pw || cmd != `sudo -n -- sh -c 'id -u'` {
		t.Errorf("nopasswd: %q, %v, %v", cmd, pw, err)
	}
	a.Sudo = sudoPrompt
	cmd, pw, err = sudoWrap(a, "echo 'hi'", "post gres")
	if err != nil || !pw || cmd != `sudo -S -k -p '' -u 'post gres' -- sh -c 'exec </dev/null; echo '\''hi'\'''` {
		t.Errorf("prompt: %q, %v, %v", cmd, pw, err)
	}
	a.Sudo = sudoNone
	if _, _, err := sudoWrap(a, "id", ""); !errors.Is(err, errSudoDisabled) {
		t.Errorf("none: %v", err)
	}
}

func TestRunResultText(t *testing.T) {
	r := runResult{Stdout: "out\n", Stderr: "", Exit: 2}
	if got, want := r.text(), "exit status: 2\n--- stdout ---\nout\n--- stderr ---"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	res, err := commandResult(r, nil)
	if err != nil || !res.IsError {
		t.Errorf("non-zero exit is not a tool error: %+v, %v", res, err)
	}
}

func TestFormElicitation(t *testing.T) {
	for _, tc := range []struct {
		caps string
		want bool
	}{
		{``, false},
		{`{}`, false},
		{`{"elicitation":{}}`, true},
		{`{"elicitation":{"form":{}}}`, true},
		{`{"elicitation":{"url":{}}}`, false},
		{`{"elicitation":{"form":{},"url":{}}}`, true},
	} {
		if got := formElicitation(json.RawMessage(tc.caps)); got != tc.want {
			t.Errorf("capabilities %s: form elicitation = %v, want %v", tc.caps, got, tc.want)
		}
	}
	ask := elicitAsker(nil)
	if _, err := ask(context.Background(), "alias \"x\" needs a password", "t", "set FOO"); !errors.Is(err, errNoElicitation) || !strings.Contains(err.Error(), "set FOO") {
		t.Errorf("asking without a call: %v", err)
	}
}
