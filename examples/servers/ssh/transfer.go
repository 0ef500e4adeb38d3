package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/pkg/sftp"
)

// destinationPath applies the scp/rsync rule for where a source named base
// lands: a destination ending in a separator, or naming an existing
// directory, receives the source inside it under base; any other
// destination is the exact path of the copy. join is path.Join for remote
// paths and filepath.Join for local ones.
func destinationPath(dst string, dstIsDir bool, base string, join func(...string) string) string {
	if dstIsDir || strings.HasSuffix(dst, "/") || strings.HasSuffix(dst, string(os.PathSeparator)) {
		return join(dst, base)
	}
	return dst
}

// transferStats counts what a transfer moved.
type transferStats struct {
	Files   int
	Bytes   int64
	Skipped []string // neither files nor directories (symlinks, devices)
}

func (t transferStats) summary(verb, where string) string {
	s := fmt.Sprintf("%s %s (%s) to %s", verb, plural(t.Files, "file", "files"), plural(int(t.Bytes), "byte", "bytes"), where)
	if len(t.Skipped) > 0 {
		s += fmt.Sprintf("; skipped %s that are not regular files or directories: %s", plural(len(t.Skipped), "entry", "entries"), strings.Join(t.Skipped, ", "))
	}
	return s
}

// upload copies the local file or tree at local to the remote path dst and
// returns where it went.
func upload(ctx context.Context, sc *sftp.Client, local, dst string) (string, transferStats, error) {
	var st transferStats
	info, err := os.Stat(local)
	if err != nil {
		return "", st, err
	}
	dstInfo, err := sc.Stat(dst)
	dstIsDir := err == nil && dstInfo.IsDir()
	target := destinationPath(dst, dstIsDir, filepath.Base(filepath.Clean(local)), path.Join)
	if !info.IsDir() {
		if err := mkdirRemote(sc, path.Dir(target)); err != nil {
			return "", st, err
		}
		n, err := uploadFile(sc, local, target, info.Mode().Perm())
		if err != nil {
			return "", st, err
		}
		st.Files, st.Bytes = 1, n
		return target, st, nil
	}
	err = filepath.WalkDir(local, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(local, p)
		if err != nil {
			return err
		}
		to := target
		if rel != "." {
			to = path.Join(target, filepath.ToSlash(rel))
		}
		switch {
		case d.IsDir():
			return mkdirRemote(sc, to)
		case d.Type().IsRegular():
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n, err := uploadFile(sc, p, to, fi.Mode().Perm())
			if err != nil {
				return err
			}
			st.Files++
			st.Bytes += n
		default:
			st.Skipped = append(st.Skipped, p)
		}
		return nil
	})
	return target, st, err
}

func mkdirRemote(sc *sftp.Client, dir string) error {
	if dir == "." || dir == "/" || dir == "" {
		return nil
	}
	if err := sc.MkdirAll(dir); err != nil {
		return fmt.Errorf("create remote directory %s: %w", dir, err)
	}
	return nil
}

func uploadFile(sc *sftp.Client, local, remote string, mode os.FileMode) (int64, error) {
	src, err := os.Open(local)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	dst, err := sc.OpenFile(remote, os.O_WRONLY|os.O_CREATE|os.O_TRUNC)
	if err != nil {
		return 0, fmt.Errorf("create remote %s: %w", remote, err)
	}
	n, err := dst.ReadFrom(src)
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("upload %s: %w", remote, err)
	}
	if err := sc.Chmod(remote, mode); err != nil {
		return n, fmt.Errorf("chmod remote %s: %w", remote, err)
	}
	return n, nil
}

// download copies the remote file or tree at src to the local path dst and
// returns where it went.
func download(ctx context.Context, sc *sftp.Client, src, dst string) (string, transferStats, error) {
	var st transferStats
	src = path.Clean(src)
	info, err := sc.Stat(src)
	if err != nil {
		return "", st, fmt.Errorf("stat remote %s: %w", src, err)
	}
	dstInfo, err := os.Stat(dst)
	dstIsDir := err == nil && dstInfo.IsDir()
	target := destinationPath(dst, dstIsDir, path.Base(src), filepath.Join)
	if !info.IsDir() {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return "", st, err
		}
		n, err := downloadFile(sc, src, target, info.Mode().Perm())
		if err != nil {
			return "", st, err
		}
		st.Files, st.Bytes = 1, n
		return target, st, nil
	}
	prefix := strings.TrimSuffix(src, "/") + "/"
	w := sc.Walk(src)
	for w.Step() {
		if err := ctx.Err(); err != nil {
			return target, st, err
		}
		if err := w.Err(); err != nil {
			return target, st, fmt.Errorf("walk remote %s: %w", w.Path(), err)
		}
		to := target
		if w.Path() != src {
			to = filepath.Join(target, filepath.FromSlash(strings.TrimPrefix(w.Path(), prefix)))
		}
		fi := w.Stat()
		switch {
		case fi.IsDir():
			if err := os.MkdirAll(to, 0o755); err != nil {
				return target, st, err
			}
		case fi.Mode().IsRegular():
			n, err := downloadFile(sc, w.Path(), to, fi.Mode().Perm())
			if err != nil {
				return target, st, err
			}
			st.Files++
			st.Bytes += n
		default:
			st.Skipped = append(st.Skipped, w.Path())
		}
	}
	return target, st, nil
}

func downloadFile(sc *sftp.Client, remote, local string, mode os.FileMode) (int64, error) {
	src, err := sc.Open(remote)
	if err != nil {
		return 0, fmt.Errorf("open remote %s: %w", remote, err)
	}
	defer src.Close()
	dst, err := os.OpenFile(local, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode|0o200)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(dst, src) // File.WriteTo reads with concurrent requests
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, fmt.Errorf("download %s: %w", remote, err)
	}
	if err := os.Chmod(local, mode); err != nil && !errors.Is(err, fs.ErrPermission) {
		return n, err
	}
	return n, nil
}
