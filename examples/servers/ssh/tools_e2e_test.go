package main_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// The alias tools manage a 0600 JSON file that holds no secret.
func TestAliasTools(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	if out := r.ok("list_aliases", map[string]any{}); strings.Contains(out, "box") {
		t.Fatalf("list_aliases before any add: %q", out)
	}
	r.addAlias("box", nil)
	r.addAlias("pw", map[string]any{"auth": "password", "key_path": nil, "sudo": "prompt"})
	out := r.ok("list_aliases", map[string]any{})
	for _, want := range []string{"box", "pw", r.sshd.User(), strconv.Itoa(r.sshd.Port())} {
		if !strings.Contains(out, want) {
			t.Fatalf("list_aliases %q lacks %q", out, want)
		}
	}

	fi, err := os.Stat(r.aliases)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("aliases file mode %v, want 0600", fi.Mode().Perm())
	}
	var file any
	if err := json.Unmarshal(mustRead(t, r.aliases), &file); err != nil {
		t.Fatalf("aliases file is not JSON: %v\n%s", err, mustRead(t, r.aliases))
	}
	// No field could hold a secret (the values are checked for the real
	// secrets when the test ends).
	for _, k := range jsonKeys(file) {
		if k := strings.ToLower(k); k == "password" || strings.Contains(k, "passphrase") || strings.Contains(k, "secret") {
			t.Errorf("aliases file has a %q field:\n%s", k, mustRead(t, r.aliases))
		}
	}
	// No temporary file is left beside it (atomic writes clean up).
	entries, _ := os.ReadDir(filepath.Dir(r.aliases))
	for _, e := range entries {
		if e.Name() != "aliases.json" && e.Name() != "known_hosts" {
			t.Errorf("unexpected file %s beside the aliases file", e.Name())
		}
	}

	r.ok("remove_alias", map[string]any{"alias": "box"})
	if out := r.ok("list_aliases", map[string]any{}); strings.Contains(out, "box") || !strings.Contains(out, "pw") {
		t.Fatalf("list_aliases after removing box: %q", out)
	}
	r.fails("remove_alias", map[string]any{"alias": "box"}, "unknown alias")
	r.fails("exec", map[string]any{"alias": "box", "command": "true"}, "unknown alias")
	r.fails("add_alias", map[string]any{"alias": "bad", "host": r.sshd.Host(), "user": r.sshd.User(), "auth": "telepathy"}, "auth")
	r.fails("add_alias", map[string]any{"alias": "bad name", "host": r.sshd.Host(), "user": r.sshd.User()}, "alias")
	if strings.Contains(string(mustRead(t, r.aliases)), "bad") {
		t.Fatalf("a refused alias reached the file:\n%s", mustRead(t, r.aliases))
	}
}

// jsonKeys lists every object key in v, at any depth.
func jsonKeys(v any) []string {
	var keys []string
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			keys = append(keys, k)
			keys = append(keys, jsonKeys(e)...)
		}
	case []any:
		for _, e := range v {
			keys = append(keys, jsonKeys(e)...)
		}
	}
	return keys
}

// The five filesystem tools, over SFTP as the login user, in the format a
// local filesystem tool gives.
func TestFilesystemTools(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.addAlias("box", nil)
	r.writeRemote("proj/a.txt", "alpha\nbeta\ngamma\n")
	r.writeRemote("proj/notes.md", "func in prose\n")
	r.writeRemote("proj/src/b.go", "package src\n\nfunc B() {}\n")
	r.writeRemote("proj/src/c.go", "package src\n\nfunc C() {}\n")
	abs := r.remotePath("proj/a.txt")

	t.Run("read_file", func(t *testing.T) {
		whole := "     1\talpha\n     2\tbeta\n     3\tgamma"
		for _, p := range []string{"proj/a.txt", "~/proj/a.txt", abs} {
			if got := r.ok("read_file", map[string]any{"alias": "box", "path": p}); got != whole {
				t.Errorf("read_file %s = %q, want %q", p, got, whole)
			}
		}
		if got := r.ok("read_file", map[string]any{"alias": "box", "path": abs, "offset": 2, "limit": 1}); got != "     2\tbeta" {
			t.Errorf("read_file offset 2 limit 1 = %q", got)
		}
		r.fails("read_file", map[string]any{"alias": "box", "path": "proj/missing.txt"}, "missing.txt")
	})

	t.Run("list_files", func(t *testing.T) {
		cases := []struct {
			args map[string]any
			want string
		}{
			{map[string]any{"path": "proj"}, "a.txt\nnotes.md\nsrc/"},
			{map[string]any{"path": "proj", "recursive": true}, "a.txt\nnotes.md\nsrc/\nsrc/b.go\nsrc/c.go"},
			{map[string]any{"path": r.remotePath("proj/src")}, "b.go\nc.go"},
			{map[string]any{"path": "proj", "recursive": true, "max_entries": 2}, "a.txt\nnotes.md\n[truncated: first 2 entries shown]"},
		}
		for _, c := range cases {
			c.args["alias"] = "box"
			if got := r.ok("list_files", c.args); got != c.want {
				t.Errorf("list_files %v = %q, want %q", c.args, got, c.want)
			}
		}
	})

	t.Run("grep_files", func(t *testing.T) {
		cases := []struct {
			args map[string]any
			want string
		}{
			{map[string]any{"pattern": "^func", "path": "proj", "glob": "*.go"}, "proj/src/b.go:3:func B() {}\nproj/src/c.go:3:func C() {}"},
			{map[string]any{"pattern": "^func", "path": "proj"}, "proj/notes.md:1:func in prose\nproj/src/b.go:3:func B() {}\nproj/src/c.go:3:func C() {}"},
			{map[string]any{"pattern": "^func", "path": "proj", "max_matches": 1}, "proj/notes.md:1:func in prose\n[truncated: first 1 matches shown]"},
			{map[string]any{"pattern": "nowhere", "path": "proj"}, "No matches."},
		}
		for _, c := range cases {
			c.args["alias"] = "box"
			if got := r.ok("grep_files", c.args); got != c.want {
				t.Errorf("grep_files %v = %q, want %q", c.args, got, c.want)
			}
		}
		r.fails("grep_files", map[string]any{"alias": "box", "pattern": "(", "path": "proj"}, "pattern")
	})

	t.Run("edit_file", func(t *testing.T) {
		p := r.writeRemote("proj/edit.txt", "one x\ntwo x\nthree\n")
		if err := os.Chmod(p, 0o640); err != nil {
			t.Fatal(err)
		}
		if got, want := r.ok("edit_file", map[string]any{"alias": "box", "path": "proj/edit.txt", "old_string": "three", "new_string": "THREE"}), "Edited proj/edit.txt: 1 replacement"; got != want {
			t.Errorf("edit_file = %q, want %q", got, want)
		}
		r.fails("edit_file", map[string]any{"alias": "box", "path": "proj/edit.txt", "old_string": "x", "new_string": "y"}, "2 times")
		if got, want := r.ok("edit_file", map[string]any{"alias": "box", "path": "proj/edit.txt", "old_string": "x", "new_string": "y", "replace_all": true}), "Edited proj/edit.txt: 2 replacements"; got != want {
			t.Errorf("edit_file replace_all = %q, want %q", got, want)
		}
		if got := r.readRemote("proj/edit.txt"); got != "one y\ntwo y\nTHREE\n" {
			t.Errorf("after the edits the file reads %q", got)
		}
		if fi, _ := os.Stat(p); fi.Mode().Perm() != 0o640 {
			t.Errorf("edit changed the mode to %v", fi.Mode().Perm())
		}
		r.fails("edit_file", map[string]any{"alias": "box", "path": "proj/edit.txt", "old_string": "absent", "new_string": "z"}, "not found")

		if got, want := r.ok("edit_file", map[string]any{"alias": "box", "path": "proj/new/dir/n.txt", "old_string": "", "new_string": "hello\n"}), "Created proj/new/dir/n.txt (6 bytes)"; got != want {
			t.Errorf("edit_file creating = %q, want %q", got, want)
		}
		if got := r.readRemote("proj/new/dir/n.txt"); got != "hello\n" {
			t.Errorf("created file reads %q", got)
		}
		r.checkOwnedByUser(r.remotePath("proj/new/dir/n.txt"))
	})

	t.Run("replace_lines", func(t *testing.T) {
		r.writeRemote("proj/lines.txt", "l1\nl2\nl3\n")
		if got, want := r.ok("replace_lines", map[string]any{"alias": "box", "path": "proj/lines.txt", "start_line": 2, "end_line": 2, "content": "B1\nB2\n"}), "Replaced lines 2-2 of proj/lines.txt with 2 lines"; got != want {
			t.Errorf("replace_lines = %q, want %q", got, want)
		}
		if got, want := r.ok("replace_lines", map[string]any{"alias": "box", "path": "proj/lines.txt", "start_line": 1, "end_line": 0, "content": "top"}), "Inserted 1 line before line 1 of proj/lines.txt"; got != want {
			t.Errorf("replace_lines insert = %q, want %q", got, want)
		}
		if got := r.readRemote("proj/lines.txt"); got != "top\nl1\nB1\nB2\nl3\n" {
			t.Errorf("after replace_lines the file reads %q", got)
		}
		r.fails("replace_lines", map[string]any{"alias": "box", "path": "proj/lines.txt", "start_line": 9, "end_line": 9, "content": "x"}, "out of range")
	})

	t.Run("login user", func(t *testing.T) {
		// SFTP runs as the login user: root's files stay out of reach.
		r.fails("read_file", map[string]any{"alias": "box", "path": "/etc/shadow"})
	})
}

// checkOwnedByUser fails the test unless the account owns path.
func (r *rig) checkOwnedByUser(path string) {
	r.t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		r.t.Fatal(err)
	}
	uid, _ := r.owner()
	if got := fi.Sys().(*syscall.Stat_t).Uid; int(got) != uid {
		r.t.Errorf("%s is owned by uid %d, want the login user's %d", path, got, uid)
	}
}

func TestExec(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.addAlias("box", nil)

	out := r.exec("box", "echo out; echo err >&2")
	if want := "exit status: 0\n--- stdout ---\nout\n--- stderr ---\nerr"; out != want {
		t.Errorf("exec = %q, want %q", out, want)
	}
	failed := r.fails("exec", map[string]any{"alias": "box", "command": "echo partial; exit 3"}, "exit status: 3")
	if !strings.Contains(failed, "partial") {
		t.Errorf("a failed command's result %q lacks its output", failed)
	}
	if got := strings.TrimSpace(stdout(t, r.ok("exec", map[string]any{"alias": "box", "command": "pwd", "cwd": "/tmp"}))); got != "/tmp" {
		t.Errorf("pwd with cwd /tmp = %q", got)
	}
	if got := strings.TrimSpace(stdout(t, r.exec("box", "pwd"))); got != r.sshd.HomeDir() {
		t.Errorf("pwd = %q, want the home directory %s", got, r.sshd.HomeDir())
	}

	start := time.Now()
	r.fails("exec", map[string]any{"alias": "box", "command": "echo started; sleep 60", "timeout_seconds": 1}, "timed out")
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("a 1 s timeout returned after %v", took)
	}
	// The timed-out command was killed, not left running on the host.
	r.waitNoProcess("sleep\x0060", 10*time.Second)
	// The connection survives a timed-out command.
	r.exec("box", "true")
	if n := r.sshd.Accepted(); n != 1 {
		t.Errorf("%d logins, want 1", n)
	}
}

// waitNoProcess waits until no process of the account has a command line
// (NUL-separated arguments) containing cmdline, or fails the test after
// timeout. The sshd is on this machine, so /proc shows the remote side.
func (r *rig) waitNoProcess(cmdline string, timeout time.Duration) {
	r.t.Helper()
	uid, _ := r.owner()
	deadline := time.Now().Add(timeout)
	for {
		pids := processesOf(uid, cmdline)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("processes %v of the account still run %q %v after the timeout", pids, cmdline, timeout)
		}
		time.Sleep(50 * time.Millisecond) // a bounded poll of /proc
	}
}

// processesOf lists the pids of uid whose command line contains cmdline.
func processesOf(uid int, cmdline string) []string {
	var pids []string
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		if _, err := strconv.Atoi(d.Name()); err != nil {
			continue
		}
		fi, err := os.Stat(filepath.Join("/proc", d.Name()))
		if err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != uid {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "cmdline")); err == nil && strings.Contains(string(b), cmdline) {
			pids = append(pids, d.Name())
		}
	}
	return pids
}

func TestUploadDownloadTree(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.addAlias("box", nil)

	src := filepath.Join(t.TempDir(), "src")
	r.scan = append(r.scan, filepath.Dir(src))
	blob := make([]byte, 300<<10)
	rand.Read(blob)
	writeTree(t, src, map[string]string{
		"top.txt":           "top\n",
		"sub/blob.bin":      string(blob),
		"sub/deep/leaf.txt": "leaf\n",
		"sub/empty/":        "",
		"run.sh":            "#!/bin/sh\necho hi\n",
	})
	if err := os.Chmod(filepath.Join(src, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}

	t.Run("tree to a new path", func(t *testing.T) {
		r.ok("upload", map[string]any{"alias": "box", "local_path": src, "remote_path": "tree1"})
		compareTrees(t, src, r.remotePath("tree1"))
		r.checkOwnedByUser(r.remotePath("tree1/sub/deep/leaf.txt"))
		if fi, err := os.Stat(r.remotePath("tree1/run.sh")); err != nil || fi.Mode().Perm() != 0o755 {
			t.Errorf("uploaded run.sh: %v, %v; want mode 0755", fi.Mode(), err)
		}
	})
	t.Run("tree into a directory", func(t *testing.T) {
		r.ok("upload", map[string]any{"alias": "box", "local_path": src, "remote_path": "tree2/"})
		compareTrees(t, src, r.remotePath("tree2/src"))
	})
	t.Run("download tree", func(t *testing.T) {
		dst := filepath.Join(t.TempDir(), "dl")
		r.ok("download", map[string]any{"alias": "box", "remote_path": "tree1", "local_path": dst})
		compareTrees(t, src, dst)
		into := t.TempDir()
		r.ok("download", map[string]any{"alias": "box", "remote_path": r.remotePath("tree1"), "local_path": into})
		compareTrees(t, src, filepath.Join(into, "tree1"))
	})

	file := filepath.Join(src, "top.txt")
	singles := []struct {
		name, remote, want string
	}{
		{"trailing slash creates the directory", "in/", "in/top.txt"},
		{"existing directory", "tree1/sub", "tree1/sub/top.txt"},
		{"exact path with new parents", "a/b/renamed.txt", "a/b/renamed.txt"},
	}
	for _, s := range singles {
		t.Run("file: "+s.name, func(t *testing.T) {
			r.ok("upload", map[string]any{"alias": "box", "local_path": file, "remote_path": s.remote})
			if got := r.readRemote(s.want); got != "top\n" {
				t.Fatalf("%s reads %q", s.want, got)
			}
		})
	}
	t.Run("file: download into a directory", func(t *testing.T) {
		dst := t.TempDir()
		r.ok("download", map[string]any{"alias": "box", "remote_path": "a/b/renamed.txt", "local_path": dst})
		if b, err := os.ReadFile(filepath.Join(dst, "renamed.txt")); err != nil || string(b) != "top\n" {
			t.Fatalf("downloaded file: %q, %v", b, err)
		}
	})
	r.fails("upload", map[string]any{"alias": "box", "local_path": filepath.Join(src, "missing"), "remote_path": "x"})
	r.fails("download", map[string]any{"alias": "box", "remote_path": "missing-remote", "local_path": t.TempDir()})
}

// writeTree creates files (a name ending in / is an empty directory).
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// compareTrees fails the test unless a and b hold the same directories and
// files with the same contents.
func compareTrees(t *testing.T, a, b string) {
	t.Helper()
	ta, tb := readTree(t, a), readTree(t, b)
	if diff := cmp.Diff(ta, tb); diff != "" {
		t.Fatalf("trees %s and %s differ (-want +got):\n%s", a, b, diff)
	}
}

// readTree maps each path under root to its content; a directory maps to
// "<dir>".
func readTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			out[rel] = "<dir>"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if len(b) > 64 {
			// Keep diffs short: a digest-like summary of big files.
			out[rel] = string(b[:32]) + "…" + strconv.Itoa(len(b)) + "…" + string(bytes.TrimSpace(b[len(b)-32:]))
		} else {
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("reading tree %s: %v", root, err)
	}
	return out
}

func TestSysinfo(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.addAlias("box", nil)
	out := r.ok("sysinfo", map[string]any{"alias": "box"})
	hostname, _ := os.Hostname()
	kernel := strings.TrimSpace(string(mustRead(t, "/proc/sys/kernel/osrelease")))
	for _, want := range []string{"hostname: " + hostname, "kernel: " + kernel, "memory: ", "disk /: "} {
		if !strings.Contains(out, want) {
			t.Errorf("sysinfo lacks %q:\n%s", want, out)
		}
	}
}

// systemd is absent from a container: the tool says so clearly. On a
// machine that runs systemd, listing services works.
func TestSystemd(t *testing.T) {
	t.Parallel()
	r := newRig(t, rigOptions{})
	r.addAlias("box", nil)
	r.fails("systemd", map[string]any{"alias": "box", "action": "explode", "unit": "x"}, "unknown action")
	if _, err := os.Stat("/run/systemd/system"); err != nil {
		r.fails("systemd", map[string]any{"alias": "box", "action": "status", "unit": "ssh.service"}, "systemd is not available")
		r.fails("systemd", map[string]any{"alias": "box", "action": "list"}, "systemd is not available")
		return
	}
	if out := r.ok("systemd", map[string]any{"alias": "box", "action": "list"}); !strings.Contains(out, ".service") {
		t.Fatalf("systemd list = %q, want services", out)
	}
}
