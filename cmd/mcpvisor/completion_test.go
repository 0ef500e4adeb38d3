package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// complete runs the bash script's completion function on the words typed
// so far, the last one being completed, and returns its candidates sorted.
func complete(t *testing.T, script string, words ...string) []string {
	t.Helper()
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + w + "'"
	}
	prog := "source " + script + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" +
		strconv.Itoa(len(words)-1) + "\n_mcpvisor\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
	out, err := exec.Command("bash", "--norc", "--noprofile", "-c", prog).CombinedOutput()
	if err != nil {
		t.Fatalf("completing %q: %v\n%s", words, err, out)
	}
	got := strings.Fields(string(out))
	slices.Sort(got)
	return got
}

func TestCompletionBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	out, errOut, code := runArgs("completion", "bash")
	if code != 0 || out == "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	script := filepath.Join(t.TempDir(), "mcpvisor.bash")
	if err := os.WriteFile(script, []byte(out), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, b)
	}
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"mcpvisor", "to"}, []string{"token", "tools", "top"}},
		{[]string{"mcpvisor", "tools", "re"}, []string{"reject", "review"}},
		{[]string{"mcpvisor", "--data", "d", "tools", "re"}, []string{"reject", "review"}},
		{[]string{"mcpvisor", "logs", "--fo"}, []string{"--follow"}},
		{[]string{"mcpvisor", "tools", "review", "--se"}, []string{"--server"}},
		{[]string{"mcpvisor", "completion", ""}, []string{"bash", "fish", "zsh"}},
		{[]string{"mcpvisor", "servers", "dis"}, []string{"disable"}},
	} {
		if got := complete(t, script, tc.words...); !slices.Equal(got, tc.want) {
			t.Errorf("completing %q: %q, want %q", tc.words, got, tc.want)
		}
	}
}

// The zsh and fish scripts name every command and parse (when the shell
// is installed).
func TestCompletionZshFish(t *testing.T) {
	for _, tc := range []struct {
		shell string
		check []string // the syntax check
	}{
		{"zsh", []string{"zsh", "-n"}},
		{"fish", []string{"fish", "--no-execute"}},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			out, errOut, code := runArgs("completion", tc.shell)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			for _, c := range commands() {
				first, _, _ := strings.Cut(c.name, " ")
				if !strings.Contains(out, first) {
					t.Errorf("command %q is not in the script", first)
				}
			}
			if tc.shell == "fish" && !strings.Contains(out, "-a 'review' -d ") {
				t.Errorf("tools review is not completed as a subcommand:\n%s", out)
			}
			if _, err := exec.LookPath(tc.check[0]); err != nil {
				testenv.Unavailable(t, "%s is not installed (apt-get install zsh fish): only generated", tc.check[0])
			}
			script := filepath.Join(t.TempDir(), "mcpvisor."+tc.shell)
			if err := os.WriteFile(script, []byte(out), 0o600); err != nil {
				t.Fatal(err)
			}
			if b, err := exec.Command(tc.check[0], append(tc.check[1:], script)...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(tc.check, " "), err, b)
			}
		})
	}
	_, errOut, code := runArgs("completion", "powershell")
	if code != exitUsage || !strings.Contains(errOut, "powershell") {
		t.Errorf("completion powershell: exit %d, stderr %q; want 2", code, errOut)
	}
}
