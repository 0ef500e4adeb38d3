package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestByteSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want byteSize
	}{
		{"0", 0}, {"1048576", 1 << 20}, {"512KiB", 512 << 10}, {"256MiB", 256 << 20}, {"256mib", 256 << 20},
		{"1GiB", 1 << 30}, {"2 TiB", 2 << 40}, {"10GB", 10e9}, {"3kb", 3000}, {"7B", 7},
	} {
		var b byteSize
		if err := b.Set(tc.in); err != nil || b != tc.want {
			t.Errorf("Set(%q) = %d, %v; want %d", tc.in, b, err, tc.want)
		}
	}
	for _, in := range []string{"", "lots", "-1", "1.5GiB", "MiB", "1PiB", "9999999TiB"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("Set(%q) = %d, want an error", in, b)
		}
	}
	for b, want := range map[byteSize]string{256 << 20: "256MiB", 1 << 30: "1GiB", 1000: "1000", 0: "0", 3 << 10: "3KiB"} {
		if got := b.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int64(b), got, want)
		}
	}
}

// A bad --disk-reserve is a usage error that names the flag, on each
// command that takes it.
func TestDiskReserveRefusesBadSizes(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	for _, cmd := range []string{"serve", "run", "stdio"} {
		for _, v := range []string{"lots", "-5MiB", "1.5GiB"} {
			out, errOut, code := runArgs(cmd, "--config", cfg, "--data", t.TempDir(), "--disk-reserve", v)
			if code != 2 || out != "" || !strings.Contains(errOut, "-disk-reserve") || !strings.Contains(errOut, v) {
				t.Errorf("%s --disk-reserve %s: exit %d, stdout %q, stderr %q; want 2 and the flag named", cmd, v, code, out, errOut)
			}
		}
	}
}

// --disk-reserve reaches the journal: a reserve larger than any disk
// starts it read-only (servers and the API go on), and 0 turns the check
// off.
func TestDiskReserveReachesTheJournal(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	for _, tc := range []struct {
		reserve  string
		readOnly bool
	}{{"1000000TB", true}, {"0", false}, {"256MiB", false}} {
		s := startServe(t, "--config", cfg, "--data", t.TempDir(), "--disk-reserve", tc.reserve)
		code, body := get(t, s.url+"/healthz", "")
		var health struct {
			Journal string `json:"journal"`
		}
		if err := json.Unmarshal(body, &health); err != nil || code != http.StatusOK {
			t.Fatalf("--disk-reserve %s: /healthz %d %s (%v)", tc.reserve, code, body, err)
		}
		if got := health.Journal == "read-only: disk full"; got != tc.readOnly {
			t.Errorf("--disk-reserve %s: /healthz %s; read-only wanted: %v", tc.reserve, body, tc.readOnly)
		}
		if err := s.shutdown(t); err != nil {
			t.Errorf("--disk-reserve %s: serve: %v", tc.reserve, err)
		}
	}
}
