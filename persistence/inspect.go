package persistence

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"
)

// A journal directory is checked before Badger opens it, because Badger
// repairs by deleting: a MANIFEST that is missing or cut short makes it
// start an empty journal and delete the table files the MANIFEST no longer
// names, and a WAL that stops reading midway is truncated there. The check
// reads only; what it finds decides whether the files are copied aside
// (quarantine) and whether Open refuses.

// Finding is one thing the check found wrong with a journal file.
type Finding struct {
	File string `json:"file"` // the file's name in the journal directory
	// Problem says what is wrong, in a sentence.
	Problem string `json:"problem"`
	// Records is how many records the damaged part held, when the file
	// says (a table's key count); 0 when unknown.
	Records int64 `json:"records,omitempty"`
	// Fatal findings make Open refuse: the journal cannot be opened
	// without losing what the file holds.
	Fatal bool `json:"fatal"`
}

func (f Finding) String() string {
	s := f.File + ": " + f.Problem
	if f.Records > 0 {
		s += fmt.Sprintf(" (about %d records)", f.Records)
	}
	return s
}

// Inspection is what Inspect found in a journal directory.
type Inspection struct {
	Dir    string `json:"dir"`
	Tables int    `json:"tables"` // .sst files
	// Verified is how many tables had every checksum verified: all of
	// them, unless Open found the journal closed cleanly and checked only
	// that the tables are those it left.
	Verified int       `json:"verified"`
	WALs     int       `json:"wals"`     // .mem files
	Records  int64     `json:"records"`  // keys in the tables that could be read, plus the WALs' readable entries
	Findings []Finding `json:"findings"` // empty when the journal looks whole
	// Marks are the high-water marks the journal last wrote beside
	// itself (zero when it never did): Open compares them with what it
	// finds, to count events and history records lost.
	Marks Marks `json:"marks"`
}

// Fatal reports whether a finding makes Open refuse.
func (in Inspection) Fatal() bool {
	return slices.ContainsFunc(in.Findings, func(f Finding) bool { return f.Fatal })
}

// Inspect checks the journal in dir without changing it: that its MANIFEST
// reads and names exactly the table files present, that every table's
// checksums hold, and where each WAL stops being readable. It does not
// take the directory's lock: on a journal a running host holds, a table a
// compaction deletes meanwhile may be reported missing. An error is
// returned only when dir cannot be read; damage is in the findings. It
// reads every table in full, so it takes about as long as reading the
// journal from disk.
func Inspect(dir string) (Inspection, error) { return inspect(dir, nil, 0) }

// inspect is Inspect, except that the tables whose size and modification
// time are as clean says (what a clean close left), that time being
// before the clean mark's (written), have only their index read: their
// blocks' checksums were verified at an earlier start or, for a table
// written since, held when Badger wrote and synced it, and verifying them
// all costs a read of the whole journal at every start. File times are
// coarse (a few milliseconds), so a table changed in the tick the mark was
// written in would keep its stamp: such a table is verified. With clean
// nil every table is verified.
func inspect(dir string, clean map[string]TableStamp, written int64) (Inspection, error) {
	in := Inspection{Dir: dir, Findings: []Finding{}}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return in, nil
	}
	if err != nil {
		return in, fmt.Errorf("journal %s: %w", dir, err)
	}
	tables := map[uint64]string{}
	var wals, vlogs []string
	var data int // files that hold records
	hasManifest := false
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
		case name == "MANIFEST":
			hasManifest = true
		case strings.HasSuffix(name, ".sst"):
			if id, ok := table.ParseFileID(name); ok {
				tables[id] = name
			}
			data++
		case strings.HasSuffix(name, ".mem"):
			wals = append(wals, name)
			data++
		case strings.HasSuffix(name, ".vlog"):
			vlogs = append(vlogs, name)
			data++
		}
	}
	in.Tables, in.WALs = len(tables), len(wals)
	in.Marks, _ = readMarks(dir)

	if hasManifest {
		in.checkManifest(dir, tables)
	} else if data > 0 {
		in.add(Finding{File: "MANIFEST", Fatal: true,
			Problem: fmt.Sprintf("missing beside %d table, %d WAL and value-log files: opening would start an empty journal and delete the tables", len(tables)+len(wals), data-len(tables)-len(wals))})
	}
	ids := make([]uint64, 0, len(tables))
	for id := range tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		stamp, ok := clean[tables[id]]
		full := !ok || stamp.ModTime >= written || stampOf(dir, tables[id]) != stamp
		in.checkTable(dir, tables[id], full)
		if full {
			in.Verified++
		}
	}
	slices.Sort(wals)
	for _, name := range wals {
		in.checkWAL(dir, name)
	}
	// Value logs are WALs too in format. Badger replays only the last
	// one, truncating it where it stops reading; it fails on any shorter
	// than its header, after changing other files.
	slices.Sort(vlogs)
	for i, name := range vlogs {
		if i == len(vlogs)-1 {
			in.checkWAL(dir, name)
			break
		}
		in.checkLogHeader(dir, name)
	}
	return in, nil
}

func (in *Inspection) add(f Finding) { in.Findings = append(in.Findings, f) }

// checkManifest replays the MANIFEST as Badger would and compares the
// tables it names with the files present: Badger deletes a table file its
// MANIFEST does not name, and refuses to open without one it names.
func (in *Inspection) checkManifest(dir string, tables map[uint64]string) {
	f, err := os.Open(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		in.add(Finding{File: "MANIFEST", Problem: "unreadable: " + err.Error(), Fatal: true})
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		in.add(Finding{File: "MANIFEST", Problem: "unreadable: " + err.Error(), Fatal: true})
		return
	}
	var m badger.Manifest
	var end int64
	err = guard(func() error {
		var err error
		m, end, err = badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir))
		return err
	})
	if err != nil {
		in.add(Finding{File: "MANIFEST", Problem: "damaged: " + err.Error(), Fatal: true})
		return
	}
	if end < st.Size() {
		// Badger truncates a change cut short, as after a crash in the
		// middle of an append; it is harmless only if what it named is
		// still consistent with the files, which the checks below see.
		in.add(Finding{File: "MANIFEST", Problem: fmt.Sprintf("%d bytes at its end are not a whole change and would be dropped", st.Size()-end)})
	}
	var unnamed []string
	for id, name := range tables {
		if _, ok := m.Tables[id]; !ok {
			unnamed = append(unnamed, name)
		}
	}
	slices.Sort(unnamed)
	if len(unnamed) > 0 {
		in.add(Finding{File: "MANIFEST", Fatal: true,
			Problem: fmt.Sprintf("does not name %d of the %d table files present (%s): opening would delete them", len(unnamed), len(tables), strings.Join(unnamed, ", "))})
	}
	var missing []string
	for id := range m.Tables {
		if _, ok := tables[id]; !ok {
			missing = append(missing, table.IDToFilename(id))
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		in.add(Finding{File: "MANIFEST", Fatal: true,
			Problem: fmt.Sprintf("names %d table files that are missing (%s)", len(missing), strings.Join(missing, ", "))})
	}
}

// stampOf is the size and modification time of dir's file name.
func stampOf(dir, name string) TableStamp {
	info, err := os.Stat(filepath.Join(dir, name))
	if err != nil {
		return TableStamp{Size: -1}
	}
	return TableStamp{Size: info.Size(), ModTime: info.ModTime().UnixNano()}
}

// checkTable opens a table file read-only, as Badger would (which reads
// its index and verifies the index's checksum), and if full verifies every
// block's checksum too. Badger's own open checks no block by default, and
// a table cut short makes it panic.
func (in *Inspection) checkTable(dir, name string, full bool) {
	path := filepath.Join(dir, name)
	var keys uint32
	var err error
	// A table keeps the compression it was written with, which may differ
	// from today's option, and Badger reads a block on opening it; so each
	// compression is tried until the index opens, and it says which.
	for _, c := range []options.CompressionType{options.None, options.Snappy, options.ZSTD} {
		err = guard(func() error {
			t, err := openTable(path, c, options.NoVerification)
			if err != nil {
				return err
			}
			keys = t.KeyCount()
			compression := t.CompressionType()
			if err := t.MmapFile.Close(-1); err != nil || !full {
				return err
			}
			t, err = openTable(path, compression, options.OnTableRead)
			if err != nil {
				return err
			}
			return t.MmapFile.Close(-1)
		})
		if err == nil {
			in.Records += int64(keys)
			return
		}
	}
	in.add(Finding{File: name, Problem: "damaged: " + firstLine(err.Error()), Records: int64(keys), Fatal: true})
}

// openTable maps a table file read-only; closing its MmapFile with -1
// releases it without truncating (the Table's own DecrRef would delete
// the file).
func openTable(path string, compression options.CompressionType, mode options.ChecksumVerificationMode) (*table.Table, error) {
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		return nil, err
	}
	if errors.Is(err, z.NewFile) || len(mf.Data) == 0 {
		_ = mf.Close(-1)
		return nil, errors.New("empty file")
	}
	t, err := table.OpenTable(mf, table.Options{ChkMode: mode, Compression: compression, BlockSize: 4 << 10})
	if err != nil {
		_ = mf.Close(-1)
		return nil, err
	}
	return t, nil
}

// Badger's WAL (a .mem file) is a 20-byte header then entries: a header
// (meta, user meta, then uvarint key length, value length and expiry),
// the key, the value, and a big-endian CRC-32C of all three. A
// transaction's entries end with one whose meta has bitFinTxn; Badger
// replays whole transactions and truncates the file after the last one.
const (
	walHeaderSize = 20
	walBitTxn     = 1 << 6
	walBitFinTxn  = 1 << 7
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checkWAL reads a WAL as Badger's replay does and reports the bytes after
// the last whole transaction that are not the zeroed, preallocated tail:
// Badger would truncate them away without a word.
func (in *Inspection) checkWAL(dir, name string) {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		in.add(Finding{File: name, Problem: "unreadable: " + err.Error()})
		return
	}
	if len(data) == 0 && strings.HasSuffix(name, ".mem") {
		return // made and not yet written: Badger takes it as new
	}
	if len(data) < walHeaderSize {
		in.add(Finding{File: name, Problem: fmt.Sprintf("%d bytes, shorter than its header", len(data)), Fatal: true})
		return
	}
	// The header's first 8 bytes name the encryption key, 0 for none:
	// the journal is never encrypted, and Badger fails on another after
	// it has replayed and flushed the WALs.
	if id := binary.BigEndian.Uint64(data[:8]); id != 0 {
		in.add(Finding{File: name, Problem: fmt.Sprintf("its header names encryption key %d; the journal is not encrypted", id), Fatal: true})
		return
	}
	entries, end := replayWAL(data)
	in.Records += entries
	if end >= len(data) {
		return
	}
	if tail := data[end:]; !allZero(tail) {
		in.add(Finding{File: name, Problem: fmt.Sprintf(
			"%d bytes after offset %d are not whole transactions and would be dropped (a write cut short by a crash, or damage)", len(data)-end, end)})
	}
}

// checkLogHeader checks a value log Badger does not replay: that it has
// its header, with no encryption key.
func (in *Inspection) checkLogHeader(dir, name string) {
	f, err := os.Open(filepath.Join(dir, name))
	if err != nil {
		in.add(Finding{File: name, Problem: "unreadable: " + err.Error()})
		return
	}
	defer f.Close()
	var h [walHeaderSize]byte
	if n, err := io.ReadFull(f, h[:]); err != nil {
		in.add(Finding{File: name, Problem: fmt.Sprintf("%d bytes, shorter than its header", n), Fatal: true})
	} else if id := binary.BigEndian.Uint64(h[:8]); id != 0 {
		in.add(Finding{File: name, Problem: fmt.Sprintf("its header names encryption key %d; the journal is not encrypted", id), Fatal: true})
	}
}

// replayWAL returns the entries of the WAL's whole transactions and the
// offset after the last one.
func replayWAL(data []byte) (entries int64, end int) {
	if len(data) < walHeaderSize {
		return 0, len(data)
	}
	off, end := walHeaderSize, walHeaderSize
	var pending int64
	inTxn := false
	for off < len(data) {
		n, meta, ok := walEntry(data[off:])
		if !ok {
			break
		}
		off += n
		switch {
		case meta&walBitTxn != 0:
			inTxn = true
			pending++
		case meta&walBitFinTxn != 0:
			if !inTxn {
				return entries, end
			}
			entries += pending
			pending, inTxn, end = 0, false, off
		default:
			if inTxn {
				return entries, end
			}
			entries++
			end = off
		}
	}
	return entries, end
}

// walEntry decodes one entry's length; ok is false for a zero, cut or
// mismatched one.
func walEntry(b []byte) (n int, meta byte, ok bool) {
	if len(b) < 2 {
		return 0, 0, false
	}
	i := 2
	klen, c := binary.Uvarint(b[i:])
	if c <= 0 {
		return 0, 0, false
	}
	i += c
	vlen, c := binary.Uvarint(b[i:])
	if c <= 0 {
		return 0, 0, false
	}
	i += c
	_, c = binary.Uvarint(b[i:])
	if c <= 0 {
		return 0, 0, false
	}
	i += c
	if klen == 0 || klen > 1<<16 || vlen > uint64(len(b)) {
		return 0, 0, false
	}
	body := i + int(klen) + int(vlen)
	if body+4 > len(b) {
		return 0, 0, false
	}
	if crc32.Checksum(b[:body], castagnoli) != binary.BigEndian.Uint32(b[body:]) {
		return 0, 0, false
	}
	return body + 4, b[0], true
}

// guard runs f, turning a panic into an error: Badger panics on some
// damaged files instead of failing.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			if msg == "" {
				msg = fmt.Sprintf("%T", r)
			}
			err = fmt.Errorf("%w: badger panicked: %s", ErrDamaged, msg)
		}
	}()
	return f()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// quarantine copies every file of the journal (not its directories) into
// a new directory dir/quarantine-<UTC time>, and returns its path. Copies,
// not links: Badger truncates some files in place.
func quarantine(dir string, now time.Time) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	q := filepath.Join(dir, "quarantine-"+now.UTC().Format("20060102T150405.000000000Z"))
	if err := os.Mkdir(q, 0o700); err != nil {
		return "", err
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "LOCK" {
			continue
		}
		if err := copyFile(filepath.Join(dir, e.Name()), filepath.Join(q, e.Name())); err != nil {
			return q, err
		}
	}
	return q, syncDir(q)
}

func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if err := copySparse(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// copySparse copies src to dst leaving holes where src has zeroed blocks:
// Badger preallocates its WAL and value log (32 and 128 MiB here), mostly
// zeros after a crash.
func copySparse(dst, src *os.File) error {
	buf := make([]byte, 1<<20)
	var size int64
	for {
		n, err := io.ReadFull(src, buf)
		if n > 0 {
			if allZero(buf[:n]) {
				if _, err := dst.Seek(int64(n), io.SeekCurrent); err != nil {
					return err
				}
			} else if _, err := dst.Write(buf[:n]); err != nil {
				return err
			}
			size += int64(n)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return dst.Truncate(size)
		}
		if err != nil {
			return err
		}
	}
}

var zeros = make([]byte, 64<<10)

func allZero(b []byte) bool {
	for len(b) > 0 {
		n := min(len(b), len(zeros))
		if !bytes.Equal(b[:n], zeros[:n]) {
			return false
		}
		b = b[n:]
	}
	return true
}
