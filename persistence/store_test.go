package persistence

import (
	"bufio"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/google/go-cmp/cmp"
)

func TestRecordsRoundTripAcrossReopen(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	server := ServerRecord{
		Name: "github", Origin: OriginAPI, Enabled: true, EnabledByAPI: true, Transport: "stdio",
		Description: "GitHub", FriendlyName: "GH", Config: []byte(`{"command":"gh"}`), Created: t0, Updated: t0.Add(time.Hour),
	}
	catalog := CatalogRecord{Server: "github", Updated: t0, Tools: []ToolRecord{{
		Name: "mcp__github__issues", Tool: "issues", Title: "Issues", Description: "list issues",
		InputSchema: []byte(`{"type":"object"}`), OutputSchema: []byte(`{}`), Annotations: []byte(`{"readOnlyHint":true}`),
		Icons: []byte(`[]`), Meta: []byte(`{"a":1}`), Destructive: true, TaskSupport: "optional",
	}}}
	event := EventRecord{Server: "github", Method: "notifications/tools/list_changed", Params: []byte(`{"x":1}`), Received: t0}
	grant := GrantRecord{Scope: Scope{Session: "s1", Stack: "f1"}, Group: "github", Granted: t0}
	call := HistoryRecord{
		Time: t0, Kind: HistoryCall, Server: "github", Scope: Scope{Session: "s1"}, Tool: "mcp__github__issues",
		Duration: 1500 * time.Millisecond, Outcome: "ok", ResultSize: 42, Arguments: []byte(`{}`), Result: []byte(`{"ok":true}`),
	}
	lifecycle := HistoryRecord{Time: t0, Kind: HistoryLifecycle, Server: "github", Transition: "exited", Detail: "exit 1", PID: 77, Stderr: []string{"boom"}}
	task := TaskRecord{
		Server: "github", TaskID: "786512e2-9e0d-44bd-8f29-789f320fe840", Tool: "mcp__github__search", Scope: Scope{Session: "s1", Stack: "f1"},
		Created: t0, Updated: t0.Add(time.Minute), TTL: time.Hour, PollInterval: 5 * time.Second, Status: TaskCompleted,
		StatusMessage: "done", Detached: true, Deadline: t0.Add(time.Hour), Result: []byte(`{"content":[]}`), Error: "x",
		Done: true, EventSeq: 9,
	}
	unfinished := TaskRecord{Server: "github", TaskID: "t2", Created: t0, Updated: t0, Status: TaskWorking}

	tests := []struct {
		name string
		op   Op
		read func(*Store) (any, error)
		want any
	}{
		{"server", PutServer(server), func(s *Store) (any, error) { return s.Servers() },
			[]ServerRecord{withV(server)}},
		{"catalog", PutCatalog(catalog), func(s *Store) (any, error) { return s.Catalogs() },
			map[string]CatalogRecord{"github": withV(catalog)}},
		{"event", AppendEvent(event), func(s *Store) (any, error) { return s.Events(EventFilter{}) },
			[]EventRecord{func() EventRecord { e := withV(event); e.Seq, e.Status = 1, EventPending; return e }()}},
		{"grant", PutGrant(grant), func(s *Store) (any, error) { return s.Grants() },
			[]GrantRecord{withV(grant)}},
		{"call history", AppendHistory(call), func(s *Store) (any, error) { return s.History(HistoryFilter{}) },
			[]HistoryRecord{func() HistoryRecord { h := withV(call); h.Seq = 1; return h }()}},
		{"lifecycle history", AppendHistory(lifecycle), func(s *Store) (any, error) { return s.History(HistoryFilter{}) },
			[]HistoryRecord{func() HistoryRecord { h := withV(lifecycle); h.Seq = 1; return h }()}},
		{"task", PutTask(task), func(s *Store) (any, error) { return s.Tasks(TaskFilter{}) },
			[]TaskRecord{withV(task)}},
		{"unfinished task", PutTask(unfinished), func(s *Store) (any, error) { return s.Tasks(TaskFilter{Unfinished: true}) },
			[]TaskRecord{withV(unfinished)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			s := openStore(t, dir, Options{})
			mustApply(t, s, tt.op)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir, Options{})
			got, err := tt.read(s)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("after reopen (-want +got):\n%s", diff)
			}
		})
	}
}

func withV[T any, P record[T]](r T) T {
	*P(&r).schemaVersion() = SchemaVersion
	return r
}

func TestPutAndDeleteServer(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	mustApply(t, s,
		PutServer(ServerRecord{Name: "b", Transport: "stdio"}),
		PutServer(ServerRecord{Name: "a", Transport: "stdio"}),
		PutCatalog(CatalogRecord{Server: "a"}),
		PutCatalog(CatalogRecord{Server: "b"}),
		PutServer(ServerRecord{Name: "a", Transport: "http"}), // upsert
	)
	servers, err := s.Servers()
	if err != nil {
		t.Fatal(err)
	}
	want := []ServerRecord{{V: 1, Name: "a", Transport: "http"}, {V: 1, Name: "b", Transport: "stdio"}}
	if diff := cmp.Diff(want, servers); diff != "" {
		t.Errorf("Servers (-want +got):\n%s", diff)
	}

	mustApply(t, s, DeleteServer("a"))
	servers, _ = s.Servers()
	catalogs, err := s.Catalogs()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]ServerRecord{{V: 1, Name: "b", Transport: "stdio"}}, servers); diff != "" {
		t.Errorf("Servers after delete (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]CatalogRecord{"b": {V: 1, Server: "b"}}, catalogs); diff != "" {
		t.Errorf("Catalogs after delete (-want +got):\n%s", diff)
	}
}

func TestSeqsContinueAboveAllOld(t *testing.T) {
	tests := []struct {
		name  string
		prune bool // process everything and prune it all before reopening
	}{
		{"reopen", false},
		{"reopen after prune deleted everything", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			clock := newFakeClock()
			opts := Options{Now: clock.Now, EventRetention: time.Hour, HistoryRetention: time.Hour}
			s := openStore(t, dir, opts)
			var ops []Op
			for range 10 {
				ops = append(ops, AppendEvent(EventRecord{Server: "a", Method: "m"}), AppendHistory(HistoryRecord{Kind: HistoryLifecycle}))
			}
			res := mustApply(t, s, ops...)
			if got := res.Events[9].Seq; got != 10 || s.LastEventSeq() != 10 || s.LastHistorySeq() != 10 {
				t.Fatalf("last seqs: event %d (store %d), history %d; want 10", got, s.LastEventSeq(), s.LastHistorySeq())
			}
			if tt.prune {
				ids := make([]uint64, 10)
				for i := range ids {
					ids[i] = uint64(i + 1)
				}
				mustApply(t, s, AckEvents(ids...))
				clock.Advance(2 * time.Hour)
				pr, err := s.Prune()
				if err != nil {
					t.Fatal(err)
				}
				if pr != (PruneResult{Events: 10, History: 10}) {
					t.Fatalf("Prune = %+v, want everything", pr)
				}
				if evs, _ := s.Events(EventFilter{}); len(evs) != 0 {
					t.Fatalf("%d events left after prune", len(evs))
				}
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openStore(t, dir, opts)
			if s.LastEventSeq() != 10 || s.LastHistorySeq() != 10 {
				t.Errorf("after reopen: LastEventSeq %d, LastHistorySeq %d; want 10, 10", s.LastEventSeq(), s.LastHistorySeq())
			}
			res = mustApply(t, s, AppendEvent(EventRecord{Server: "a"}), AppendHistory(HistoryRecord{Kind: HistoryCall}))
			if res.Events[0].Seq != 11 || res.History[0].Seq != 11 {
				t.Errorf("new seqs: event %d, history %d; want 11, 11", res.Events[0].Seq, res.History[0].Seq)
			}
		})
	}
}

func TestApplySplitsBatchTooBigForOneTxn(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	// Five times badger's transaction limit in 1 KiB events (about 12,000
	// with our 16 MiB memtables): enough for several splits, small enough
	// to run under -race in seconds. MCPVISOR_SPLIT_EVENTS=200000 runs the
	// full-size case.
	n := int(5 * s.db.MaxBatchSize() / 1024)
	if v, err := strconv.Atoi(os.Getenv("MCPVISOR_SPLIT_EVENTS")); err == nil {
		n = v
	}
	params := []byte(`"` + strings.Repeat("x", 1022) + `"`)
	ops := make([]Op, n)
	for i := range ops {
		ops[i] = AppendEvent(EventRecord{Server: "flood", Method: "m", Params: params})
	}
	before := s.commits.Load()
	res := mustApply(t, s, ops...)
	if txns := s.commits.Load() - before; txns < 2 {
		t.Fatalf("batch committed in %d transaction(s); the test needs a batch badger splits", txns)
	}
	t.Logf("%d events of 1 KiB committed in %d transactions", n, s.commits.Load()-before)
	if len(res.Events) != n || res.Events[n-1].Seq != uint64(n) || s.LastEventSeq() != uint64(n) {
		t.Fatalf("Applied %d events, last seq %d, LastEventSeq %d; want %d", len(res.Events), res.Events[len(res.Events)-1].Seq, s.LastEventSeq(), n)
	}
	if got := s.Stats().PendingEvents; got != int64(n) {
		t.Errorf("PendingEvents = %d, want %d", got, n)
	}
	pending, err := s.Events(EventFilter{Status: EventPending})
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != n {
		t.Fatalf("%d pending events stored, want %d", len(pending), n)
	}
	for i, e := range pending {
		if e.Seq != uint64(i+1) || string(e.Params) != string(params) {
			t.Fatalf("event %d: seq %d, %d bytes of params", i, e.Seq, len(e.Params))
		}
	}
}

func TestApplyRejectsInvalidOps(t *testing.T) {
	tests := []struct {
		name string
		op   Op
	}{
		{"zero op", Op{}},
		{"server without name", PutServer(ServerRecord{})},
		{"server name with NUL", PutServer(ServerRecord{Name: "a\x00b"})},
		{"server name too long", PutServer(ServerRecord{Name: strings.Repeat("n", maxNameLen+1)})},
		{"delete server without name", DeleteServer("")},
		{"catalog without server", PutCatalog(CatalogRecord{})},
		{"grant without session", PutGrant(GrantRecord{Group: "g"})},
		{"grant without group", PutGrant(GrantRecord{Scope: Scope{Session: "s"}})},
		{"grant stack with NUL", PutGrant(GrantRecord{Scope: Scope{Session: "s", Stack: "\x00"}, Group: "g"})},
		{"grant group with NUL", PutGrant(GrantRecord{Scope: Scope{Session: "s"}, Group: "g\x00"})},
		{"delete grants without session", DeleteGrants(Scope{Stack: "f"})},
		{"history without kind", AppendHistory(HistoryRecord{})},
		{"history kind with NUL", AppendHistory(HistoryRecord{Kind: "a\x00"})},
		{"grant history without group", AppendHistory(HistoryRecord{Kind: HistoryGrant, Scope: Scope{Session: "s"}})},
		{"task without server", PutTask(TaskRecord{TaskID: "t"})},
		{"task without id", PutTask(TaskRecord{Server: "a"})},
		{"task server with NUL", PutTask(TaskRecord{Server: "a\x00b", TaskID: "t"})},
		{"task id with NUL", PutTask(TaskRecord{Server: "a", TaskID: "t\x00"})},
		{"task id too long", PutTask(TaskRecord{Server: "a", TaskID: strings.Repeat("t", maxNameLen+1)})},
		{"delete task without server", DeleteTask("", "t")},
		{"delete task without id", DeleteTask("a", "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t, t.TempDir(), Options{})
			// A valid op first: nothing of the batch may be written.
			_, err := s.Apply([]Op{AppendEvent(EventRecord{Server: "a"}), tt.op})
			if !errors.Is(err, ErrInvalidRecord) {
				t.Fatalf("Apply = %v, want ErrInvalidRecord", err)
			}
			if evs, _ := s.Events(EventFilter{}); len(evs) != 0 || s.LastEventSeq() != 0 {
				t.Errorf("rejected batch wrote %d events, LastEventSeq %d", len(evs), s.LastEventSeq())
			}
		})
	}
}

func TestEmptyApplyIsNoOp(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	before := s.commits.Load()
	res, err := s.Apply(nil)
	if err != nil || !cmp.Equal(res, Applied{}) || s.commits.Load() != before {
		t.Errorf("Apply(nil) = %+v, %v after %d commits; want a no-op", res, err, s.commits.Load()-before)
	}
}

func TestAckEvents(t *testing.T) {
	clock := newFakeClock()
	s := openStore(t, t.TempDir(), Options{Now: clock.Now})
	mustApply(t, s, AppendEvent(EventRecord{Server: "a"}), AppendEvent(EventRecord{Server: "a"}), AppendEvent(EventRecord{Server: "a"}))
	ackTime := clock.Advance(time.Minute)

	tests := []struct {
		name        string
		ops         []Op
		wantAcked   []uint64
		wantUnknown []uint64
		wantPending []uint64
	}{
		{"ack one", []Op{AckEvents(2)}, []uint64{2}, nil, []uint64{1, 3}},
		{"again is idempotent", []Op{AckEvents(2)}, []uint64{2}, nil, []uint64{1, 3}},
		{"unknown ids reported", []Op{AckEvents(3, 99, 0)}, []uint64{3}, []uint64{99, 0}, []uint64{1}},
		{"event appended in the same batch", []Op{AppendEvent(EventRecord{Server: "b"}), AckEvents(4, 1)}, []uint64{4, 1}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustApply(t, s, tt.ops...)
			if diff := cmp.Diff(tt.wantAcked, res.Acked); diff != "" {
				t.Errorf("Acked (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantUnknown, res.UnknownAcks); diff != "" {
				t.Errorf("UnknownAcks (-want +got):\n%s", diff)
			}
			pending, err := s.Events(EventFilter{Status: EventPending})
			if err != nil {
				t.Fatal(err)
			}
			var seqs []uint64
			for _, e := range pending {
				seqs = append(seqs, e.Seq)
			}
			if diff := cmp.Diff(tt.wantPending, seqs); diff != "" {
				t.Errorf("pending (-want +got):\n%s", diff)
			}
			if got := s.Stats().PendingEvents; got != int64(len(tt.wantPending)) {
				t.Errorf("PendingEvents = %d, want %d", got, len(tt.wantPending))
			}
		})
	}
	processed, err := s.Events(EventFilter{Status: EventProcessed})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range processed {
		if !e.ProcessedAt.Equal(ackTime) {
			t.Errorf("event %d ProcessedAt %v, want %v", e.Seq, e.ProcessedAt, ackTime)
		}
	}
	if len(processed) != 4 {
		t.Errorf("%d processed events, want 4", len(processed))
	}
}

func countKeys(t *testing.T, s *Store, prefix string) int {
	t.Helper()
	n := 0
	err := s.view(func(txn *badger.Txn) error {
		return iterate(txn, iteration{prefix: []byte(prefix)}, func(*badger.Item) (bool, error) {
			n++
			return true, nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMethodsAfterCloseReturnErrClosed(t *testing.T) {
	s, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	calls := map[string]func() error{
		"Apply":       func() error { _, err := s.Apply([]Op{AppendEvent(EventRecord{})}); return err },
		"Apply(nil)":  func() error { _, err := s.Apply(nil); return err },
		"Servers":     func() error { _, err := s.Servers(); return err },
		"Catalogs":    func() error { _, err := s.Catalogs(); return err },
		"Grants":      func() error { _, err := s.Grants(); return err },
		"Events":      func() error { _, err := s.Events(EventFilter{}); return err },
		"Event":       func() error { _, _, err := s.Event(1); return err },
		"History":     func() error { _, err := s.History(HistoryFilter{}); return err },
		"AccessAt":    func() error { _, err := s.AccessAt("g", time.Now()); return err },
		"Tasks":       func() error { _, err := s.Tasks(TaskFilter{}); return err },
		"Task":        func() error { _, _, err := s.Task("a", "t"); return err },
		"TaskByID":    func() error { _, _, err := s.TaskByID("t"); return err },
		"Prune":       func() error { _, err := s.Prune(); return err },
		"ValueLog GC": s.RunValueLogGC,
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", name, err)
		}
	}
	if st := s.Stats(); st.LSMBytes != 0 || st.VLogBytes != 0 {
		t.Errorf("Stats after Close = %+v, want zero sizes", st)
	}
}

func TestCloseWaitsForConcurrentUse(t *testing.T) {
	s, err := Open(t.TempDir(), Options{MaintenanceInterval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	working := make(chan struct{}, 4)
	for i := range 4 {
		wg.Go(func() {
			signal := sync.OnceFunc(func() { working <- struct{}{} })
			defer signal()
			for n := 0; ; n++ {
				if n == 1 {
					signal()
				}
				var err error
				if i%2 == 0 {
					_, err = s.Apply([]Op{AppendEvent(EventRecord{Server: "a"})})
				} else {
					_, err = s.Events(EventFilter{Status: EventPending, Limit: 10})
				}
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("worker %d: %v", i, err)
					return
				}
			}
		})
	}
	for range 4 {
		<-working
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
}

func TestOpenLockedInProcess(t *testing.T) {
	dir := t.TempDir()
	openStore(t, dir, Options{})
	s, err := Open(dir, Options{})
	if err == nil {
		s.Close()
		t.Fatal("second Open of the same directory succeeded")
	}
	checkLocked(t, err, dir)
}

func checkLocked(t *testing.T, err error, dir string) {
	t.Helper()
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Open = %v, want ErrLocked", err)
	}
	if want := "journal " + dir + " is in use by another process"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
}

func TestOpenLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), childEnv+"=lock", childDirEnv+"="+dir)
	child.Stderr = os.Stderr
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		child.Process.Kill()
		child.Wait()
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("child said %q, %v; want it to hold the lock", line, err)
	}
	s, err := Open(dir, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded while another process held the directory")
	}
	checkLocked(t, err, dir)

	// Once the child lets go the directory opens.
	stdin.Close()
	if err := child.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	openStore(t, dir, Options{})
}

func TestOpenCreatesPrivateDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "journal")
	s := openStore(t, dir, Options{})
	if s.Dir() != dir {
		t.Errorf("Dir() = %q, want %q", s.Dir(), dir)
	}
	info, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := info.Mode().Perm(); perm != 0o700 {
		t.Errorf("directory mode %v, want 0700", perm)
	}
}

func TestReadsReportCorruptAndNewerRecords(t *testing.T) {
	newer, err := encodeRecord(&ServerRecord{Name: "future"})
	if err != nil {
		t.Fatal(err)
	}
	// A fixmap header, the key "v" (fixstr 0xa1 'v'), then the version.
	if newer[1] != 0xa1 || newer[2] != 'v' || newer[3] != SchemaVersion {
		t.Fatalf("unexpected encoding % x", newer[:4])
	}
	newer[3] = SchemaVersion + 1
	tests := []struct {
		name  string
		value []byte
		want  error
	}{
		{"garbage", []byte{0xc1, 0xff}, ErrCorrupt},
		{"truncated", newer[:len(newer)/2], ErrCorrupt},
		{"newer schema", newer, ErrSchemaVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openStore(t, t.TempDir(), Options{})
			txn := s.db.NewTransaction(true)
			if err := txn.Set([]byte("s/bad"), tt.value); err != nil {
				t.Fatal(err)
			}
			if err := txn.Commit(); err != nil {
				t.Fatal(err)
			}
			_, err := s.Servers()
			if !errors.Is(err, tt.want) {
				t.Fatalf("Servers = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), `"s/bad"`) {
				t.Errorf("error %q does not name the key", err)
			}
		})
	}
}

func TestEventsFilter(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	mustApply(t, s,
		AppendEvent(EventRecord{Server: "a", Method: "x"}), // 1
		AppendEvent(EventRecord{Server: "b", Method: "x"}), // 2
		AppendEvent(EventRecord{Server: "a", Method: "y"}), // 3
		AppendEvent(EventRecord{Server: "a", Method: "x"}), // 4
		AppendEvent(EventRecord{Server: "b", Method: "y"}), // 5
	)
	mustApply(t, s, AckEvents(1, 3))

	tests := []struct {
		name string
		f    EventFilter
		want []uint64
	}{
		{"all", EventFilter{}, []uint64{1, 2, 3, 4, 5}},
		{"pending", EventFilter{Status: EventPending}, []uint64{2, 4, 5}},
		{"processed", EventFilter{Status: EventProcessed}, []uint64{1, 3}},
		{"server", EventFilter{Server: "a"}, []uint64{1, 3, 4}},
		{"method", EventFilter{Method: "y"}, []uint64{3, 5}},
		{"pending of a server", EventFilter{Status: EventPending, Server: "a"}, []uint64{4}},
		{"after", EventFilter{After: 3}, []uint64{4, 5}},
		{"pending after", EventFilter{Status: EventPending, After: 2}, []uint64{4, 5}},
		{"limit", EventFilter{Limit: 2}, []uint64{1, 2}},
		{"pending limit", EventFilter{Status: EventPending, Limit: 1}, []uint64{2}},
		{"after everything", EventFilter{After: ^uint64(0)}, nil},
		{"newest", EventFilter{Limit: 2, Newest: true}, []uint64{4, 5}},
		{"newest of a server", EventFilter{Server: "a", Limit: 2, Newest: true}, []uint64{3, 4}},
		{"newest pending", EventFilter{Status: EventPending, Limit: 2, Newest: true}, []uint64{4, 5}},
		{"newest after", EventFilter{After: 3, Limit: 5, Newest: true}, []uint64{4, 5}},
		{"newest without a limit", EventFilter{Newest: true}, []uint64{1, 2, 3, 4, 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, err := s.Events(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for _, e := range evs {
				got = append(got, e.Seq)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("seqs (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := s.Events(EventFilter{Status: "done"}); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("unknown status: %v, want ErrInvalidFilter", err)
	}

	e, found, err := s.Event(3)
	if err != nil || !found || e.Method != "y" || e.Status != EventProcessed {
		t.Errorf("Event(3) = %+v, %v, %v", e, found, err)
	}
	if _, found, err := s.Event(6); found || err != nil {
		t.Errorf("Event(6) found %v, err %v; want not found", found, err)
	}
}

func TestHistoryFilter(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	s := openStore(t, t.TempDir(), Options{})
	mustApply(t, s,
		AppendHistory(HistoryRecord{Time: at(1), Kind: HistoryLifecycle, Server: "a", Transition: "spawned"}),                          // 1
		AppendHistory(HistoryRecord{Time: at(2), Kind: HistoryCall, Server: "a", Tool: "t1", Scope: Scope{Session: "s1"}}),             // 2
		AppendHistory(HistoryRecord{Time: at(3), Kind: HistoryCall, Server: "b", Tool: "t2", Scope: Scope{Session: "s2"}}),             // 3
		AppendHistory(HistoryRecord{Time: at(4), Kind: HistoryLifecycle, Server: "b", Transition: "ready"}),                            // 4
		AppendHistory(HistoryRecord{Time: at(5), Kind: HistoryCall, Server: "a", Tool: "t1", Scope: Scope{Session: "s2"}}),             // 5
		AppendHistory(HistoryRecord{Time: at(6), Kind: HistoryCall, Server: "a", Tool: "t3", Scope: Scope{Session: "s1", Stack: "f"}}), // 6
	)
	tests := []struct {
		name string
		f    HistoryFilter
		want []uint64
	}{
		{"all", HistoryFilter{}, []uint64{1, 2, 3, 4, 5, 6}},
		{"kind", HistoryFilter{Kind: HistoryCall}, []uint64{2, 3, 5, 6}},
		{"unknown kind", HistoryFilter{Kind: "nope"}, nil},
		{"server", HistoryFilter{Server: "a"}, []uint64{1, 2, 5, 6}},
		{"tool", HistoryFilter{Tool: "t1"}, []uint64{2, 5}},
		{"session", HistoryFilter{Session: "s1"}, []uint64{2, 6}},
		{"after", HistoryFilter{After: 4}, []uint64{5, 6}},
		{"kind after", HistoryFilter{Kind: HistoryCall, After: 3}, []uint64{5, 6}},
		{"since until", HistoryFilter{Since: at(2), Until: at(5)}, []uint64{2, 3, 4}},
		{"limit", HistoryFilter{Limit: 2}, []uint64{1, 2}},
		{"newest", HistoryFilter{Limit: 2, Newest: true}, []uint64{5, 6}},
		{"newest of a kind", HistoryFilter{Kind: HistoryLifecycle, Limit: 1, Newest: true}, []uint64{4}},
		{"newest after", HistoryFilter{After: 4, Limit: 5, Newest: true}, []uint64{5, 6}},
		{"newest kind after", HistoryFilter{Kind: HistoryCall, After: 3, Newest: true}, []uint64{5, 6}},
		{"newest filtered", HistoryFilter{Server: "a", Limit: 3, Newest: true}, []uint64{2, 5, 6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs, err := s.History(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []uint64
			for _, h := range hs {
				got = append(got, h.Seq)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("seqs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConcurrentReadsDuringApply(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				evs, err := s.Events(EventFilter{})
				if err != nil {
					t.Error(err)
					return
				}
				for i, e := range evs { // a read sees whole batches, in order
					if e.Seq != uint64(i+1) {
						t.Errorf("event %d has seq %d", i, e.Seq)
						return
					}
				}
				if _, err := s.History(HistoryFilter{Kind: HistoryCall, Newest: true, Limit: 3}); err != nil {
					t.Error(err)
					return
				}
				_ = s.Stats()
			}
		})
	}
	for range 20 {
		mustApply(t, s, AppendEvent(EventRecord{Server: "a"}), AppendEvent(EventRecord{Server: "b"}), AppendHistory(HistoryRecord{Kind: HistoryCall}))
	}
	close(done)
	wg.Wait()
}

func TestBadgerLogsRoutedToLogger(t *testing.T) {
	var buf syncBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := openStore(t, t.TempDir(), Options{Logger: logger})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if !strings.Contains(out, "component=badger") || !strings.Contains(out, "level=DEBUG") {
		t.Errorf("no badger debug lines in the log:\n%s", out)
	}
	if strings.Contains(out, "level=INFO") {
		t.Errorf("badger's Info should be logged at Debug:\n%s", out)
	}

	buf.Reset()
	quiet := slog.New(slog.NewTextHandler(&buf, nil)) // Info and above
	s = openStore(t, t.TempDir(), Options{Logger: quiet})
	s.Close()
	if buf.String() != "" {
		t.Errorf("an Info logger got badger's chatter:\n%s", buf.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func (b *syncBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.b.Reset()
}
