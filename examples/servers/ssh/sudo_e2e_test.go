package main_test

import (
	"os"
	"strings"
	"testing"
	"time"
)

// sudoArgs are exec's arguments to run command under sudo on alias.
func sudoArgs(alias, command string) map[string]any {
	return map[string]any{"alias": alias, "command": command, "sudo": true}
}

// nopasswd runs `sudo -n`: with a NOPASSWD rule, as root, with no question.
func TestSudoNopasswd(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.sshd.SudoNopasswd(t)
	r.addAlias("box", map[string]any{"sudo": "nopasswd"})
	if got := strings.TrimSpace(stdout(t, r.ok("exec", sudoArgs("box", "id -u")))); got != "0" {
		t.Fatalf("sudo id -u = %q, want 0", got)
	}
	args := sudoArgs("box", "id -un")
	args["sudo_user"] = "nobody"
	if got := strings.TrimSpace(stdout(t, r.ok("exec", args))); got != "nobody" {
		t.Fatalf("sudo -u nobody id -un = %q, want nobody", got)
	}
	if n := r.asker.count(); n != 0 {
		t.Fatalf("%d elicitations with nopasswd, want none", n)
	}
	// Without sudo the command runs as the login user.
	if got := strings.TrimSpace(stdout(t, r.exec("box", "id -un"))); got != r.sshd.User() {
		t.Fatalf("id -un = %q, want %s", got, r.sshd.User())
	}
}

// nopasswd against a sudoers rule that wants a password fails at once with
// "a password is required": sudo -n never prompts, so nothing hangs.
func TestSudoNopasswdWithoutRuleFailsFast(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.sshd.SudoWithPassword(t)
	r.addAlias("box", map[string]any{"sudo": "nopasswd"})
	start := time.Now()
	args := sudoArgs("box", "id -u")
	args["timeout_seconds"] = 30
	r.fails("exec", args, "a password is required")
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("the refusal took %v: sudo -n must fail fast, not wait for the command timeout", took)
	}
	if n := r.asker.count(); n != 0 {
		t.Fatalf("%d elicitations with nopasswd, want none", n)
	}
}

// prompt runs `sudo -S`: the password is elicited (a masked field), fed to
// sudo, and cached for the next call; a wrong one is dropped and asked
// again.
func TestSudoPrompt(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.sshd.SudoWithPassword(t)
	r.addAlias("box", map[string]any{"sudo": "prompt"})

	r.asker.reply("not-" + r.sshd.Password())
	r.fails("exec", sudoArgs("box", "id -u"), "password")
	if n := r.asker.count(); n != 1 {
		t.Fatalf("%d elicitations, want 1", n)
	}

	r.asker.reply(r.sshd.Password())
	for range 2 {
		if got := strings.TrimSpace(stdout(t, r.ok("exec", sudoArgs("box", "id -u")))); got != "0" {
			t.Fatalf("sudo id -u = %q, want 0", got)
		}
	}
	if n := r.asker.count(); n != 2 {
		t.Fatalf("%d elicitations, want 2 (a wrong password, then the right one, cached)", n)
	}
	// The password is sudo's, not the command's: the command's stdin is
	// empty.
	if got := stdout(t, r.ok("exec", sudoArgs("box", "cat"))); strings.TrimSpace(got) != "" {
		t.Fatalf("the sudo command read %q from its stdin, want nothing", got)
	}
	req := r.asker.requests()[1]
	if !strings.Contains(strings.ToLower(req.Message), "sudo") {
		t.Errorf("sudo elicitation %q does not say it is for sudo", req.Message)
	}
}

// none refuses sudo before running anything.
func TestSudoNone(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.sshd.SudoNopasswd(t) // sudo would work: the alias forbids it
	r.addAlias("box", map[string]any{"sudo": "none"})
	marker := "/root/mcpssh-" + r.sshd.User()
	r.fails("exec", sudoArgs("box", "touch "+marker), "sudo is disabled")
	if _, err := os.Stat(marker); err == nil {
		os.Remove(marker)
		t.Fatalf("sudo none ran the command: %s exists", marker)
	}
	args := map[string]any{"alias": "box", "command": "id -u", "sudo_user": "nobody"}
	r.fails("exec", args, "sudo is disabled")
	if n := r.asker.count(); n != 0 {
		t.Fatalf("%d elicitations with sudo none, want none", n)
	}
}
