package supervision

import (
	"slices"
	"strings"
)

// baseEnvKeys are the parent variables a child may inherit; LC_* and XDG_*
// are matched by prefix.
var baseEnvKeys = map[string]bool{
	"PATH": true, "HOME": true, "USER": true, "LOGNAME": true, "SHELL": true,
	"LANG": true, "TERM": true, "TMPDIR": true, "TZ": true,
}

func inheritable(key string) bool {
	return baseEnvKeys[key] || strings.HasPrefix(key, "LC_") || strings.HasPrefix(key, "XDG_")
}

// BaseEnv filters parent, a KEY=VALUE list such as os.Environ(), down to the
// variables a child may inherit: PATH, HOME, USER, LOGNAME, SHELL, LANG, LC_*,
// TERM, TMPDIR, TZ and XDG_*. Everything else (tokens, cloud credentials,
// the host's own configuration) stays behind. Entries without "=" are
// dropped. The result keeps parent's order with keys unique; when a key
// repeats, the last value wins (as os/exec does). It never returns nil.
func BaseEnv(parent []string) []string {
	return mergeEnv(parent, nil, inheritable)
}

// MergeEnv returns base with overrides applied: an override replaces the
// base value of its key in place, and keys new to base follow in sorted
// order. Keys are unique (a repeated base key keeps its last value). base is
// not modified; the result is never nil.
func MergeEnv(base []string, overrides map[string]string) []string {
	return mergeEnv(base, overrides, func(string) bool { return true })
}

func mergeEnv(base []string, overrides map[string]string, keep func(key string) bool) []string {
	out := make([]string, 0, len(base)+len(overrides))
	at := make(map[string]int, len(base)+len(overrides))
	for _, kv := range base {
		key, _, ok := strings.Cut(kv, "=")
		if !ok || key == "" || !keep(key) {
			continue
		}
		if i, seen := at[key]; seen {
			out[i] = kv
			continue
		}
		at[key] = len(out)
		out = append(out, kv)
	}
	var added []string
	for key, value := range overrides {
		if i, seen := at[key]; seen {
			out[i] = key + "=" + value
		} else {
			added = append(added, key)
		}
	}
	slices.Sort(added)
	for _, key := range added {
		out = append(out, key+"="+overrides[key])
	}
	return out
}
