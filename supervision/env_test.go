package supervision

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBaseEnv(t *testing.T) {
	tests := []struct {
		name   string
		parent []string
		want   []string
	}{
		{"nil", nil, []string{}},
		{"allow-list kept in order", []string{
			"TZ=UTC", "PATH=/bin", "HOME=/root", "USER=u", "LOGNAME=u", "SHELL=/bin/sh",
			"LANG=C.UTF-8", "TERM=xterm", "TMPDIR=/tmp",
		}, []string{
			"TZ=UTC", "PATH=/bin", "HOME=/root", "USER=u", "LOGNAME=u", "SHELL=/bin/sh",
			"LANG=C.UTF-8", "TERM=xterm", "TMPDIR=/tmp",
		}},
		{"prefixes", []string{"LC_ALL=C", "XDG_CONFIG_HOME=/c", "LC=x", "XDG=x", "xdg_data=x"},
			[]string{"LC_ALL=C", "XDG_CONFIG_HOME=/c"}},
		{"secrets and the rest dropped", []string{
			"AWS_SECRET_ACCESS_KEY=s", "GITHUB_TOKEN=t", "PATH=/bin", "LD_PRELOAD=/x.so", "path=/lower",
		}, []string{"PATH=/bin"}},
		{"malformed dropped", []string{"PATH", "=x", "HOME=/h"}, []string{"HOME=/h"}},
		{"empty value kept", []string{"TERM="}, []string{"TERM="}},
		{"value may hold =", []string{"LANG=a=b"}, []string{"LANG=a=b"}},
		{"duplicate key: last value, first position", []string{"PATH=/a", "HOME=/h", "PATH=/b"},
			[]string{"PATH=/b", "HOME=/h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, BaseEnv(tt.parent)); diff != "" {
				t.Errorf("BaseEnv mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeEnv(t *testing.T) {
	tests := []struct {
		name      string
		base      []string
		overrides map[string]string
		want      []string
	}{
		{"both empty", nil, nil, []string{}},
		{"no overrides copies base", []string{"A=1", "B=2"}, nil, []string{"A=1", "B=2"}},
		{"override replaces in place", []string{"A=1", "B=2", "C=3"}, map[string]string{"B": "x"},
			[]string{"A=1", "B=x", "C=3"}},
		{"new keys follow sorted", []string{"M=1"}, map[string]string{"Z": "z", "A": "a", "K": "k"},
			[]string{"M=1", "A=a", "K=k", "Z=z"}},
		{"mixed", []string{"PATH=/bin", "HOME=/h"}, map[string]string{"TOKEN": "t", "PATH": "/opt:/bin"},
			[]string{"PATH=/opt:/bin", "HOME=/h", "TOKEN=t"}},
		{"override to empty value", []string{"A=1"}, map[string]string{"A": ""}, []string{"A="}},
		{"duplicate base keys made unique", []string{"A=1", "B=2", "A=3"}, nil, []string{"A=3", "B=2"}},
		{"duplicate base key overridden", []string{"A=1", "A=3"}, map[string]string{"A": "o"}, []string{"A=o"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := append([]string(nil), tt.base...)
			if diff := cmp.Diff(tt.want, MergeEnv(base, tt.overrides)); diff != "" {
				t.Errorf("MergeEnv mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.base, base); diff != "" {
				t.Errorf("MergeEnv modified base (-before +after):\n%s", diff)
			}
		})
	}
}
