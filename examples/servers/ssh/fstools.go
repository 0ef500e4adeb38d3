package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/pkg/sftp"
)

// Bounds on what the filesystem tools read.
const (
	maxReadBytes     = 16 << 20 // read_file, edit_file, replace_lines
	maxGrepFileBytes = 8 << 20  // larger files are skipped by grep_files
	maxWalkEntries   = 100000   // list_files and grep_files stop walking here
	defaultMaxList   = 1000
	defaultMaxGrep   = 200
)

// remotePath turns "~" and "~/x" into paths relative to the login
// directory, where SFTP resolves relative paths.
func remotePath(p string) string {
	switch {
	case p == "" || p == "~":
		return "."
	case strings.HasPrefix(p, "~/"):
		return "./" + strings.TrimLeft(p[2:], "/")
	}
	return p
}

// readRemote reads the whole file at p, up to maxReadBytes. exists is
// false (with a nil error) when there is no such file.
func readRemote(sc *sftp.Client, p string) (content string, exists bool, mode os.FileMode, err error) {
	st, err := sc.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, 0, nil
	}
	if err != nil {
		return "", false, 0, fmt.Errorf("stat %s: %w", p, err)
	}
	if st.IsDir() {
		return "", true, 0, fmt.Errorf("%s is a directory", p)
	}
	if st.Size() > maxReadBytes {
		return "", true, 0, fmt.Errorf("%s is %d bytes, more than the %d this tool reads; use exec (head, sed -n, tail)", p, st.Size(), maxReadBytes)
	}
	f, err := sc.Open(p)
	if err != nil {
		return "", true, 0, fmt.Errorf("open %s: %w", p, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxReadBytes+1))
	if err != nil {
		return "", true, 0, fmt.Errorf("read %s: %w", p, err)
	}
	if len(b) > maxReadBytes {
		return "", true, 0, fmt.Errorf("%s is more than %d bytes; use exec (head, sed -n, tail)", p, maxReadBytes)
	}
	return string(b), true, st.Mode().Perm(), nil
}

// writeRemote replaces the content of the file at p in place (keeping its
// owner and mode), creating it and its parent directories if create is set.
func writeRemote(sc *sftp.Client, p, content string, create bool) error {
	flags := os.O_WRONLY | os.O_TRUNC
	if create {
		flags |= os.O_CREATE
		if dir := path.Dir(p); dir != "." && dir != "/" {
			if err := sc.MkdirAll(dir); err != nil {
				return fmt.Errorf("create %s: %w", dir, err)
			}
		}
	}
	f, err := sc.OpenFile(p, flags)
	if err != nil {
		return fmt.Errorf("open %s for writing: %w", p, err)
	}
	if _, err := f.Write([]byte(content)); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return nil
}

func readFile(sc *sftp.Client, p string, offset, limit int) (string, error) {
	content, exists, _, err := readRemote(sc, p)
	if err != nil {
		return "", err
	}
	if !exists {
		return "", fmt.Errorf("%s: no such file", p)
	}
	return formatRead(content, offset, limit)
}

func listFiles(sc *sftp.Client, root string, recursive bool, maxEntries int) (string, error) {
	st, err := sc.Stat(root)
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", root, err)
	}
	if !st.IsDir() {
		return formatList([]listEntry{{Path: path.Base(root)}}, maxEntries), nil
	}
	var entries []listEntry
	if !recursive {
		infos, err := sc.ReadDir(root)
		if err != nil {
			return "", fmt.Errorf("list %s: %w", root, err)
		}
		for _, fi := range infos {
			entries = append(entries, listEntry{Path: fi.Name(), IsDir: fi.IsDir()})
		}
		return formatList(entries, maxEntries), nil
	}
	w := sc.Walk(root)
	prefix := strings.TrimSuffix(root, "/") + "/"
	for w.Step() {
		if w.Err() != nil {
			continue // unreadable subdirectory: list what can be read
		}
		if w.Path() == root {
			continue
		}
		entries = append(entries, listEntry{Path: strings.TrimPrefix(w.Path(), prefix), IsDir: w.Stat().IsDir()})
		if len(entries) >= maxWalkEntries {
			break
		}
	}
	return formatList(entries, maxEntries), nil
}

func grepFiles(sc *sftp.Client, root, pattern, glob string, maxMatches int) (string, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return "", fmt.Errorf("pattern: %w", err)
	}
	if glob != "" {
		if _, err := path.Match(glob, ""); err != nil {
			return "", fmt.Errorf("glob: %w", err)
		}
	}
	st, err := sc.Stat(root)
	if err != nil {
		return "", fmt.Errorf("stat %s: %w", root, err)
	}
	var files []string
	if !st.IsDir() {
		files = []string{root}
	} else {
		w := sc.Walk(root)
		for w.Step() {
			if w.Err() != nil || !w.Stat().Mode().IsRegular() {
				continue
			}
			if glob != "" {
				if ok, _ := path.Match(glob, path.Base(w.Path())); !ok {
					continue
				}
			}
			files = append(files, w.Path())
			if len(files) >= maxWalkEntries {
				break
			}
		}
		sort.Strings(files)
	}
	var matches []grepMatch
	truncated := false
	for _, f := range files {
		content, ok := readForGrep(sc, f)
		if !ok {
			continue
		}
		found := grepContent(f, content, re, maxMatches-len(matches)+1)
		matches = append(matches, found...)
		if len(matches) > maxMatches {
			matches, truncated = matches[:maxMatches], true
			break
		}
	}
	return formatGrep(matches, truncated, maxMatches), nil
}

// readForGrep reads a text file for grep_files; binary, unreadable and
// oversized files are skipped (ok false), as grep -I would skip binaries.
func readForGrep(sc *sftp.Client, p string) (string, bool) {
	f, err := sc.Open(p)
	if err != nil {
		return "", false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxGrepFileBytes+1))
	if err != nil || len(b) > maxGrepFileBytes {
		return "", false
	}
	head := b[:min(len(b), 8000)]
	if strings.IndexByte(string(head), 0) >= 0 {
		return "", false
	}
	return string(b), true
}

func editFile(sc *sftp.Client, p, old, new string, replaceAll bool) (string, error) {
	content, exists, _, err := readRemote(sc, p)
	if err != nil {
		return "", err
	}
	out, n, created, err := editString(content, exists, old, new, replaceAll)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if err := writeRemote(sc, p, out, created); err != nil {
		return "", err
	}
	return formatEdited(p, n, created, len(out)), nil
}

func replaceLines(sc *sftp.Client, p string, start, end int, replacement string) (string, error) {
	content, exists, _, err := readRemote(sc, p)
	if err != nil {
		return "", err
	}
	if !exists {
		return "", fmt.Errorf("%s: no such file", p)
	}
	out, n, err := replaceLinesString(content, start, end, replacement)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	if err := writeRemote(sc, p, out, false); err != nil {
		return "", err
	}
	return formatReplaced(p, start, end, n), nil
}
