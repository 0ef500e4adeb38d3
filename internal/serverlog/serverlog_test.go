package serverlog

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixedClock always answers 2026-07-03T12:34:56.789Z, given in another zone
// to check the conversion to UTC.
func fixedClock() time.Time {
	return time.Date(2026, 7, 3, 14, 34, 56, 789_400_000, time.FixedZone("CEST", 2*3600))
}

const stamp = "2026-07-03T12:34:56.789Z"

func openT(t *testing.T, server string, opts Options) *File {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Now == nil {
		opts.Now = fixedClock
	}
	f, err := Open(server, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// openHook opens a File whose writers run hook before each line.
func openHook(t *testing.T, server string, opts Options, hook func()) *File {
	t.Helper()
	f, err := Open(server, opts)
	if err != nil {
		t.Fatal(err)
	}
	f.beforeWrite = hook // before the first Write: no writer runs yet
	return f
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) == 0 {
		return nil
	}
	if b[len(b)-1] != '\n' {
		t.Fatalf("%s does not end in a newline", path)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

func syncT(t *testing.T, f *File) {
	t.Helper()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

var lineRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z \[[a-z]+\] +\S.*$`)

func TestFormat(t *testing.T) {
	f := openT(t, "fmt", Options{})
	tags := []string{"stderr", "lifecycle", "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
	for _, tag := range tags {
		f.Write(tag, "text of "+tag)
	}
	f.Write("stderr", "first\nsecond\r\nthird\rfourth\n")
	syncT(t, f)
	got := readLines(t, f.Path())
	want := []string{
		stamp + " [stderr]    text of stderr",
		stamp + " [lifecycle] text of lifecycle",
		stamp + " [debug]     text of debug",
		stamp + " [info]      text of info",
		stamp + " [notice]    text of notice",
		stamp + " [warning]   text of warning",
		stamp + " [error]     text of error",
		stamp + " [critical]  text of critical",
		stamp + " [alert]     text of alert",
		stamp + " [emergency] text of emergency",
		stamp + ` [stderr]    first\nsecond\nthird\nfourth`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	for _, line := range got {
		if !lineRE.MatchString(line) {
			t.Errorf("line %q does not match %s", line, lineRE)
		}
		// The text starts in the same column whatever the tag.
		if line[len(stamp)+1+tagWidth] != ' ' || line[len(stamp)+1+tagWidth+1] == ' ' {
			t.Errorf("text not at column %d: %q", len(stamp)+tagWidth+2, line)
		}
	}
}

func TestFormatMilliseconds(t *testing.T) {
	for _, tc := range []struct {
		t    time.Time
		want string
	}{
		{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), "2026-01-02T03:04:05.000Z"},
		{time.Date(2026, 1, 2, 3, 4, 5, 7_999_999, time.UTC), "2026-01-02T03:04:05.007Z"},
		{time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.UTC), "2026-12-31T23:59:59.999Z"},
	} {
		if got := formatLine(tc.t, "info", "x"); !strings.HasPrefix(got, tc.want+" ") {
			t.Errorf("formatLine(%v) = %q, want prefix %q", tc.t, got, tc.want)
		}
	}
	if got := formatLine(fixedClock(), "a-much-longer-tag", "x"); got != stamp+" [a-much-longer-tag] x\n" {
		t.Errorf("long tag: %q", got)
	}
}

func TestSanitizeName(t *testing.T) {
	long := strings.Repeat("n", 300)
	tests := []struct{ in, want string }{
		{"fs", "fs"},
		{"my-server_v1.2", "my-server_v1.2"},
		{"my server", "my_server"},
		{"a/b\\c", "a_b_c"},
		{"../etc/passwd", ".._etc_passwd"},
		{"héllo", "h_llo"},
		{"日本", "__"},
		{"tab\there", "tab_here"},
		{"", "_"},
		{"\xff", "_"},
	}
	for _, tc := range tests {
		if got := SanitizeName(tc.in); got != tc.want {
			t.Errorf("SanitizeName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	a, b := SanitizeName(long), SanitizeName(long+"x")
	if len(a) != maxNameLen || len(b) != maxNameLen || a == b || !strings.HasPrefix(a, "nnnn") {
		t.Errorf("long names: %q (%d), %q (%d): want distinct, %d bytes", a, len(a), b, len(b), maxNameLen)
	}
}

func TestOpenCreatesDirThenFileAtFirstLine(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs", "mcp")
	f := openT(t, "my server", Options{Dir: dir})
	if want := filepath.Join(dir, "my_server.log"); f.Path() != want {
		t.Errorf("Path = %q, want %q", f.Path(), want)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() || st.Mode().Perm()&^0o755 != 0 {
		t.Errorf("dir: %v %v", st, err)
	}
	syncT(t, f) // nothing written: nothing to create
	if _, err := os.Stat(f.Path()); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file before its first line: %v, want none", err)
	}
	f.Write("lifecycle", "first")
	syncT(t, f)
	st, err := os.Stat(f.Path())
	if err != nil {
		t.Fatal(err)
	}
	if perm := st.Mode().Perm(); perm != 0o600 {
		t.Errorf("file mode %v, want 0600: a server's stderr is its user's alone", perm)
	}
}

// A directory removed while the host runs is created again by the next
// line.
func TestDirRemovedIsCreatedAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "logs")
	f := openT(t, "s", Options{Dir: dir})
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	f.Write("lifecycle", "after the removal")
	syncT(t, f)
	if diff := cmp.Diff([]string{stamp + " [lifecycle] after the removal"}, readLines(t, f.Path())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReopenAppends(t *testing.T) {
	dir := t.TempDir()
	f := openT(t, "s", Options{Dir: dir})
	f.Write("lifecycle", "first run")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	g := openT(t, "s", Options{Dir: dir})
	g.Write("lifecycle", "second run")
	syncT(t, g)
	want := []string{stamp + " [lifecycle] first run", stamp + " [lifecycle] second run"}
	if diff := cmp.Diff(want, readLines(t, g.Path())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// numbered writes lines "line 000".."line N-1" whose records are all
// exactly 50 bytes long (24 stamp + 1 + 11 + 1 + 12 text + newline).
func numbered(f *File, from, to int) {
	for i := from; i < to; i++ {
		f.Write("stderr", fmt.Sprintf("line %07d", i))
	}
}

func wantNumbered(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("%s [stderr]    line %07d", stamp, i))
	}
	return out
}

const recordLen = 50

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	f := openT(t, "rot", Options{Dir: dir, MaxSize: 10 * recordLen})
	if got := len(formatLine(fixedClock(), "stderr", "line 0000000")); got != recordLen {
		t.Fatalf("record is %d bytes, test assumes %d", got, recordLen)
	}
	numbered(f, 0, 25) // 10 fill the first file, 10 the second, 5 the third
	syncT(t, f)

	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"rot.log", "rot.log.1"}, names); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		path     string
		size     int64
		from, to int
	}{
		{f.Path() + ".1", 10 * recordLen, 10, 20}, // the first backup was replaced
		{f.Path(), 5 * recordLen, 20, 25},
	} {
		st, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() != tc.size {
			t.Errorf("%s: %d bytes, want %d", tc.path, st.Size(), tc.size)
		}
		if diff := cmp.Diff(wantNumbered(tc.from, tc.to), readLines(t, tc.path)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.path, diff)
		}
	}
}

func TestRotationCountsExistingFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pre.log")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 9*recordLen-1)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := openT(t, "pre", Options{Dir: dir, MaxSize: 10 * recordLen})
	numbered(f, 0, 2) // the first still fits, the second would not
	syncT(t, f)
	if diff := cmp.Diff(wantNumbered(1, 2), readLines(t, path)); diff != "" {
		t.Errorf("current (-want +got):\n%s", diff)
	}
	if got := readLines(t, path+".1"); len(got) != 2 || got[1] != wantNumbered(0, 1)[0] {
		t.Errorf("backup = %q", got)
	}
}

func TestOversizedRecordIsCut(t *testing.T) {
	f := openT(t, "big", Options{MaxSize: 200})
	f.Write("stderr", strings.Repeat("y", 1000))
	f.Write("stderr", "next")
	syncT(t, f)
	backup := readLines(t, f.Path()+".1")
	if len(backup) != 1 || len(backup[0])+1 != 200 || !strings.HasSuffix(backup[0], "...[truncated]") {
		t.Errorf("cut record: %d lines, %q", len(backup), backup)
	}
	if diff := cmp.Diff([]string{stamp + " [stderr]    next"}, readLines(t, f.Path())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestTail(t *testing.T) {
	f := openT(t, "tail", Options{MaxSize: 10 * recordLen})
	if got, err := f.Tail(5); err != nil || len(got) != 0 {
		t.Errorf("Tail of an empty log = %q, %v", got, err)
	}
	numbered(f, 0, 25) // backup: 10..19, current: 20..24
	// Tail flushes by itself: no Sync here.
	for _, tc := range []struct{ n, from int }{
		{3, 22},
		{5, 20},
		{7, 18},  // reaches into the backup
		{15, 10}, // all of both
		{100, 10},
	} {
		got, err := f.Tail(tc.n)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantNumbered(tc.from, 25), got); diff != "" {
			t.Errorf("Tail(%d) (-want +got):\n%s", tc.n, diff)
		}
	}
}

func TestTailLongFile(t *testing.T) {
	// Far more than one 64 KiB read block, so lastLines has to stitch blocks.
	f := openT(t, "long", Options{MaxSize: 1 << 30, Queue: 5000}) // no line dropped, however slow the writer
	numbered(f, 0, 5000)
	got, err := f.Tail(2000)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantNumbered(3000, 5000), got); diff != "" {
		t.Errorf("Tail(2000) (-want +got):\n%s", diff)
	}
}

func TestDroppedLinesAreCountedAndReported(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	hook := func() {
		once.Do(func() {
			close(entered)
			<-release // the writer is stuck on the first record
		})
	}
	f := openHook(t, "drop", Options{Dir: t.TempDir(), Queue: 4, Now: fixedClock}, hook)
	defer f.Close()

	f.Write("stderr", "held by the writer")
	<-entered
	numbered(f, 0, 4) // fills the queue
	numbered(f, 4, 7) // dropped
	if got := f.Dropped(); got != 3 {
		t.Errorf("Dropped = %d, want 3", got)
	}
	close(release)
	syncT(t, f) // the queue is empty again
	f.Write("stderr", "after the drops")
	syncT(t, f)

	want := append([]string{stamp + " [stderr]    held by the writer"}, wantNumbered(0, 4)...)
	want = append(want,
		stamp+" [lifecycle] 3 log lines dropped",
		stamp+" [stderr]    after the drops",
	)
	if diff := cmp.Diff(want, readLines(t, f.Path())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := f.Dropped(); got != 3 {
		t.Errorf("Dropped = %d after the notice, want 3", got)
	}
}

func TestDropsReportedAtClose(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	f := openHook(t, "drop", Options{Dir: t.TempDir(), Queue: 1, Now: fixedClock}, func() {
		once.Do(func() { close(entered); <-release })
	})
	f.Write("stderr", "a")
	<-entered
	f.Write("stderr", "b")
	f.Write("stderr", "c") // dropped, and no line follows it
	close(release)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{stamp + " [stderr]    a", stamp + " [stderr]    b", stamp + " [lifecycle] 1 log lines dropped"}
	if diff := cmp.Diff(want, readLines(t, f.Path())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestClose(t *testing.T) {
	f := openT(t, "close", Options{})
	numbered(f, 0, 3)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantNumbered(0, 3), readLines(t, f.Path())); diff != "" {
		t.Errorf("Close did not drain (-want +got):\n%s", diff)
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	f.Write("stderr", "after close")
	if err := f.Sync(); !errors.Is(err, ErrClosed) {
		t.Errorf("Sync after Close = %v, want ErrClosed", err)
	}
	if _, err := f.Tail(1); !errors.Is(err, ErrClosed) {
		t.Errorf("Tail after Close = %v, want ErrClosed", err)
	}
	if got := readLines(t, f.Path()); len(got) != 3 || f.Dropped() != 0 {
		t.Errorf("Write after Close changed something: %d lines, %d dropped", len(got), f.Dropped())
	}
}

func TestConcurrentWriters(t *testing.T) {
	const writers, each = 8, 500
	f := openT(t, "conc", Options{Queue: writers * each})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				f.Write("stderr", fmt.Sprintf("w%d %d", w, i))
			}
		})
	}
	wg.Wait()
	syncT(t, f)
	if f.Dropped() != 0 {
		t.Fatalf("dropped %d with a queue big enough for all", f.Dropped())
	}
	next := make([]int, writers)
	lines := readLines(t, f.Path())
	for _, line := range lines {
		var w, i int
		if _, err := fmt.Sscanf(line[len(stamp)+tagWidth+2:], "w%d %d", &w, &i); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if i != next[w] {
			t.Fatalf("writer %d: line %d after %d", w, i, next[w]-1)
		}
		next[w]++
	}
	if len(lines) != writers*each {
		t.Errorf("%d lines, want %d", len(lines), writers*each)
	}
}

// With a tiny queue some lines are dropped; every line is either in the
// file or counted in a drop notice, and the notices add up to Dropped.
func TestConcurrentDropsAddUp(t *testing.T) {
	const writers, each = 8, 2000
	f := openT(t, "drops", Options{Queue: 2})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				f.Write("stderr", "w"+strconv.Itoa(w)+" "+strconv.Itoa(i))
			}
		})
	}
	wg.Wait()
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	written, noticed := 0, uint64(0)
	for _, line := range readLines(t, f.Path()) {
		if n, ok := strings.CutSuffix(line, " log lines dropped"); ok {
			k, err := strconv.ParseUint(n[strings.LastIndexByte(n, ' ')+1:], 10, 64)
			if err != nil {
				t.Fatalf("notice %q: %v", line, err)
			}
			noticed += k
			continue
		}
		written++
	}
	if noticed != f.Dropped() || uint64(written)+noticed != writers*each {
		t.Errorf("written %d + noticed %d != %d lines; Dropped = %d", written, noticed, writers*each, f.Dropped())
	}
	t.Logf("%d of %d lines dropped", f.Dropped(), writers*each)
}

func TestConcurrentWriteAndClose(t *testing.T) {
	f := openT(t, "race", Options{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range 1000 {
				f.Write("info", strconv.Itoa(i))
			}
		})
	}
	wg.Go(func() { f.Tail(10) })
	wg.Go(func() { f.Sync() })
	if err := f.Close(); err != nil {
		t.Error(err)
	}
	wg.Wait()
	var lines []string
	if _, err := os.Stat(f.Path()); err == nil { // Close may have come first
		lines = readLines(t, f.Path())
	}
	if len(lines) > 4000 {
		t.Errorf("%d lines from 4000 writes", len(lines))
	}
	for _, line := range lines {
		if !lineRE.MatchString(line) {
			t.Fatalf("torn line %q", line)
		}
	}
}

// BenchmarkWrite is what a server's actor pays per log line.
func BenchmarkWrite(b *testing.B) {
	f, err := Open("bench", Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	b.ReportAllocs()
	for b.Loop() {
		f.Write("lifecycle", "connecting to http://127.0.0.1:8080/mcp (http)")
	}
}
