// Command modzip serves a commit of a module the way the Go module proxy
// would: it writes the module zip, .mod, .info and list files of one
// pseudo-version into a directory that GOPROXY=file:///dir reads. It prints
// the version.
//
//	go run . -repo ../.. -module github.com/mcpvisor/mcpvisor -out /tmp/proxy
//
// It is a module of its own so that golang.org/x/mod is a dependency of
// this tool only, not of every program that embeds mcpvisor.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

func main() {
	log.SetFlags(0)
	log.SetPrefix("modzip: ")
	repo := flag.String("repo", ".", "the git work tree holding the module at its root")
	path := flag.String("module", "", "the module path")
	out := flag.String("out", "", "the proxy directory to write into")
	rev := flag.String("rev", "HEAD", "the commit to serve")
	flag.Parse()
	if *path == "" || *out == "" {
		log.Fatal("-module and -out are required")
	}
	version, err := serve(*repo, *path, *rev, *out)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(version)
}

func serve(repo, path, rev, out string) (string, error) {
	commit, err := git(repo, "rev-parse", rev+"^{commit}")
	if err != nil {
		return "", err
	}
	stamp, err := git(repo, "show", "-s", "--format=%ct", commit)
	if err != nil {
		return "", err
	}
	secs, err := strconv.ParseInt(stamp, 10, 64)
	if err != nil {
		return "", fmt.Errorf("commit time %q: %w", stamp, err)
	}
	when := time.Unix(secs, 0).UTC()
	// No tags: the pseudo-version the go command itself would derive for
	// an untagged commit.
	version := module.PseudoVersion("", "", when, commit[:12])
	mv := module.Version{Path: path, Version: version}

	escaped, err := module.EscapePath(path)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(out, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}

	// The files committed at rev, as git archive gives them (what the go
	// command fetches from a repository), zipped under the proxy's rules:
	// no nested modules, no vendor/, size limits. CreateFromVCS would do
	// both, but it does not recognise a linked work tree (git worktree).
	tree, err := os.MkdirTemp("", "modzip-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tree)
	archive, err := gitOutput(repo, "-c", "core.autocrlf=input", "-c", "core.eol=lf", "archive", "--format=zip", commit)
	if err != nil {
		return "", err
	}
	if err := unzip(archive, tree); err != nil {
		return "", fmt.Errorf("git archive %s: %w", commit, err)
	}
	var zipped bytes.Buffer
	if err := modzip.CreateFromDir(&zipped, mv, tree); err != nil {
		return "", fmt.Errorf("zip %s: %w", mv, err)
	}
	zipFile := filepath.Join(dir, version+".zip")
	if err := os.WriteFile(zipFile, zipped.Bytes(), 0o644); err != nil {
		return "", err
	}
	if _, err := modzip.CheckZip(mv, zipFile); err != nil {
		return "", fmt.Errorf("check %s: %w", zipFile, err)
	}
	gomod, err := fileInZip(zipped.Bytes(), mv.String()+"/go.mod")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".mod"), gomod, 0o644); err != nil {
		return "", err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, when})
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, version+".info"), info, 0o644); err != nil {
		return "", err
	}
	if err := appendList(filepath.Join(dir, "list"), version); err != nil {
		return "", err
	}

	sum, err := dirhash.HashZip(zipFile, dirhash.Hash1)
	if err != nil {
		return "", err
	}
	log.Printf("%s: %d bytes, %s", mv, zipped.Len(), sum)
	return version, nil
}

func fileInZip(data []byte, name string) ([]byte, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return nil, err
	}
	f, err := zr.Open(name)
	if err != nil {
		return nil, fmt.Errorf("module zip: %w", err)
	}
	defer f.Close()
	return io.ReadAll(f)
}

func appendList(file, version string) error {
	old, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	for _, v := range strings.Fields(string(old)) {
		if v == version {
			return nil
		}
	}
	return os.WriteFile(file, append(old, version+"\n"...), 0o644)
}

// unzip writes the regular files of a git archive under dir.
func unzip(data []byte, dir string) error {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return err
	}
	for _, f := range zr.File {
		if f.FileInfo().IsDir() {
			continue
		}
		if !f.Mode().IsRegular() {
			// A symlink: the go command leaves these out of module zips.
			continue
		}
		name := filepath.Join(dir, filepath.FromSlash(f.Name))
		if !strings.HasPrefix(name, filepath.Clean(dir)+string(filepath.Separator)) {
			return fmt.Errorf("%s: outside the archive", f.Name)
		}
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return err
		}
		r, err := f.Open()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return err
		}
		if err := os.WriteFile(name, b, f.Mode().Perm()|0o200); err != nil {
			return err
		}
	}
	return nil
}

func git(dir string, args ...string) (string, error) {
	out, err := gitOutput(dir, args...)
	return strings.TrimSpace(string(out)), err
}

func gitOutput(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return nil, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr))
	}
	return out, nil
}
