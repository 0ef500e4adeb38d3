package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLimitsField(t *testing.T) {
	for _, tc := range []struct {
		entry   string
		want    *Limits
		wantErr string // a substring; "" for none
	}{
		{entry: `{"command":"x"}`},
		{entry: `{"command":"x","limits":{}}`, want: &Limits{}},
		{entry: `{"command":"x","limits":{"memory":"512MiB","cpu":0.5,"processes":64}}`,
			want: &Limits{Memory: 512 << 20, CPU: 0.5, Processes: 64}},
		{entry: `{"command":"x","limits":{"memory":1048576}}`, want: &Limits{Memory: 1 << 20}},
		{entry: `{"command":"x","limits":{"memory":"1.5 GiB"}}`, want: &Limits{Memory: 3 << 29}},
		{entry: `{"command":"x","limits":{"memory":"2GB"}}`, want: &Limits{Memory: 2e9}},
		{entry: `{"command":"x","limits":{"memory":"lots"}}`, wantErr: `field "limits.memory": "lots" is not a size`},
		{entry: `{"command":"x","limits":{"memory":true}}`, wantErr: `field "limits.memory": want a size`},
		{entry: `{"command":"x","limits":{"cpu":"half"}}`, wantErr: `field "limits.cpu": want a number of CPUs`},
		{entry: `{"command":"x","limits":{"processes":1.5}}`, wantErr: `field "limits.processes": want an integer`},
		{entry: `{"command":"x","limits":{"memroy":"1G"}}`, wantErr: `field "limits.memroy": unknown limit`},
		{entry: `{"command":"x","limits":{"cpu":1,"cpu":2}}`, wantErr: `"cpu" is given more than once`},
		{entry: `{"command":"x","limits":512}`, wantErr: `field "limits": want an object`},
	} {
		sc, err := decodeEntry([]byte(tc.entry))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: error %v, want one containing %q", tc.entry, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.entry, err)
			continue
		}
		if diff := cmp.Diff(tc.want, sc.Limits); diff != "" {
			t.Errorf("%s: limits (-want +got):\n%s", tc.entry, diff)
		}
	}
}

func TestLimitsValidate(t *testing.T) {
	for _, tc := range []struct {
		limits  Limits
		wantErr string
	}{
		{Limits{Memory: 64 << 20, CPU: 2, Processes: 10}, ""},
		{Limits{Memory: 1000}, `field "limits": invalid resource limits: memory 1000 B is under the least, 1 MiB`},
		{Limits{CPU: 0.001}, `field "limits": invalid resource limits: cpu 0.001 is under the least`},
		{Limits{Processes: -1}, `field "limits": invalid resource limits: processes -1 is negative`},
	} {
		l := tc.limits
		errs := Server{Name: "s", Command: "x", Enabled: true, Limits: &l}.validate(Options{})
		got := ""
		if len(errs) > 0 {
			got = errs[0].Error()
		}
		if tc.wantErr == "" && got != "" || tc.wantErr != "" && !strings.Contains(got, tc.wantErr) {
			t.Errorf("%+v: %q, want %q", tc.limits, got, tc.wantErr)
		}
	}
	// On a remote server the field is of no use: a warning says so.
	ws := Server{Name: "r", Type: "http", URL: "https://x.example", Limits: &Limits{Memory: 1 << 30}}.unusedFieldWarnings()
	if len(ws) != 1 || !strings.Contains(ws[0], `field "limits" is not used`) {
		t.Errorf("warnings: %q", ws)
	}
}
