package persistence

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestPutUpdateDeleteTask(t *testing.T) {
	clock := newFakeClock()
	t0 := clock.Now()
	s := openStore(t, t.TempDir(), Options{Now: clock.Now})
	task := TaskRecord{
		Server: "build", TaskID: "t-1", Tool: "mcp__build__compile", Scope: Scope{Session: "s1", Stack: "f1"},
		TTL: time.Hour, PollInterval: 2 * time.Second, Status: TaskWorking, Detached: true, Deadline: t0.Add(time.Hour),
	}
	mustApply(t, s, PutTask(task), PutTask(TaskRecord{Server: "build", TaskID: "t-2", Status: TaskWorking}))

	want := withV(task)
	want.Created, want.Updated = t0, t0 // zero times are set to Now
	wantTask(t, s, "build", "t-1", &want)

	clock.Advance(time.Minute)
	done := want
	done.Updated = clock.Now()
	done.Status, done.StatusMessage = TaskCompleted, "built"
	done.Result = []byte(`{"content":[{"type":"text","text":"ok"}]}`)
	done.Done, done.EventSeq = true, 42
	mustApply(t, s, PutTask(done))
	wantTask(t, s, "build", "t-1", &done)

	mustApply(t, s, DeleteTask("build", "t-1"), DeleteTask("build", "never-stored"))
	wantTask(t, s, "build", "t-1", nil)
	wantTask(t, s, "build", "t-2", &TaskRecord{V: 1, Server: "build", TaskID: "t-2", Status: TaskWorking, Created: t0, Updated: t0})
	if n := countKeys(t, s, prefixTask); n != 1 {
		t.Errorf("%d task keys left, want 1", n)
	}
}

// wantTask reads server's taskID and compares it with want; nil: absent.
func wantTask(t *testing.T, s *Store, server, taskID string, want *TaskRecord) {
	t.Helper()
	got, found, err := s.Task(server, taskID)
	if err != nil {
		t.Fatalf("Task(%s, %s): %v", server, taskID, err)
	}
	switch {
	case want == nil && found:
		t.Errorf("Task(%s, %s) = %+v, want none", server, taskID, got)
	case want != nil && !found:
		t.Errorf("Task(%s, %s) not found", server, taskID)
	case want != nil:
		if diff := cmp.Diff(*want, got); diff != "" {
			t.Errorf("Task(%s, %s) (-want +got):\n%s", server, taskID, diff)
		}
	}
}

func TestTaskOpsWithinOneBatch(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	a := TaskRecord{Server: "a", TaskID: "1", Status: TaskWorking}
	b := TaskRecord{Server: "a", TaskID: "2", Status: TaskWorking}
	mustApply(t, s, PutTask(a), DeleteTask("a", "1"), DeleteTask("a", "2"), PutTask(b))
	wantTask(t, s, "a", "1", nil)
	if _, found, _ := s.Task("a", "2"); !found {
		t.Errorf("task put after its delete in the same batch is missing")
	}
}

func TestTasksFilter(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	// Key order is a/1, a/2, ab/1, b/9; Created order b/9, a/2, then a/1
	// and ab/1 tied, which key order breaks.
	tasks := []TaskRecord{
		{Server: "ab", TaskID: "1", Created: at(10), Status: TaskWorking},
		{Server: "a", TaskID: "2", Created: at(5), Status: TaskCompleted, Done: true},
		{Server: "a", TaskID: "1", Created: at(10), Status: TaskInputRequired},
		{Server: "b", TaskID: "9", Created: at(0), Status: TaskLost, Done: true},
	}
	tests := []struct {
		name string
		f    TaskFilter
		want []string // server/task id
	}{
		{"all", TaskFilter{}, []string{"b/9", "a/2", "a/1", "ab/1"}},
		{"unfinished", TaskFilter{Unfinished: true}, []string{"a/1", "ab/1"}},
		{"server whose name prefixes another", TaskFilter{Server: "a"}, []string{"a/2", "a/1"}},
		{"server, unfinished", TaskFilter{Server: "a", Unfinished: true}, []string{"a/1"}},
		{"limit keeps the oldest", TaskFilter{Limit: 2}, []string{"b/9", "a/2"}},
		{"limit over the count", TaskFilter{Limit: 10}, []string{"b/9", "a/2", "a/1", "ab/1"}},
		{"unknown server", TaskFilter{Server: "c"}, nil},
	}
	s := openStore(t, t.TempDir(), Options{})
	for _, task := range tasks {
		mustApply(t, s, PutTask(task))
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Tasks(tt.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range got {
				ids = append(ids, r.Server+"/"+r.TaskID)
			}
			if diff := cmp.Diff(tt.want, ids); diff != "" {
				t.Errorf("Tasks(%+v) (-want +got):\n%s", tt.f, diff)
			}
		})
	}
	if _, err := s.Tasks(TaskFilter{Server: "a\x00"}); !errors.Is(err, ErrInvalidFilter) {
		t.Errorf("Tasks with a NUL in Server = %v, want ErrInvalidFilter", err)
	}
}

func TestTaskByID(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	mustApply(t, s,
		PutTask(TaskRecord{Server: "zeta", TaskID: "shared", Tool: "z"}),
		PutTask(TaskRecord{Server: "alpha", TaskID: "shared", Tool: "a"}),
		PutTask(TaskRecord{Server: "alpha", TaskID: "shared-2", Tool: "a2"}),
		PutTask(TaskRecord{Server: "mid", TaskID: "xshared", Tool: "m"}),
	)
	tests := []struct {
		id       string
		wantTool string // "": not found
	}{
		{"shared", "a"}, // on two servers: the first in key order
		{"shared-2", "a2"},
		{"xshared", "m"},
		{"hared", ""}, // a suffix of stored ids is not a match
		{"nope", ""},
		{"", ""},
		{"a\x00shared", ""},
	}
	for _, tt := range tests {
		got, found, err := s.TaskByID(tt.id)
		if err != nil {
			t.Fatalf("TaskByID(%q): %v", tt.id, err)
		}
		if found != (tt.wantTool != "") || got.Tool != tt.wantTool {
			t.Errorf("TaskByID(%q) = %+v, %v; want tool %q", tt.id, got, found, tt.wantTool)
		}
	}
}

func TestPruneDoneTasks(t *testing.T) {
	const day = 24 * time.Hour
	tests := []struct {
		name      string
		opts      Options
		age       time.Duration // how far the clock moves before Prune
		wantTasks int
		wantLeft  []string
	}{
		{"nothing old enough", Options{}, 29 * day, 0, []string{"done-old", "done-new", "working-old"}},
		{"old done tasks go", Options{}, 30*day + time.Hour, 1, []string{"done-new", "working-old"}},
		{"every done task goes", Options{}, 400 * day, 2, []string{"working-old"}},
		{"follow history retention", Options{HistoryRetention: day, EventRetention: 400 * day}, day + time.Hour, 1,
			[]string{"done-new", "working-old"}},
		{"event retention does not apply", Options{EventRetention: time.Hour}, 2 * day, 0,
			[]string{"done-old", "done-new", "working-old"}},
		{"negative history retention keeps", Options{HistoryRetention: -1}, 400 * day, 0,
			[]string{"done-old", "done-new", "working-old"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			opts := tt.opts
			opts.Now = clock.Now
			s := openStore(t, t.TempDir(), opts)
			s.pruneChunk = 2 // more than one chunk
			t0 := clock.Now()
			mustApply(t, s,
				PutTask(TaskRecord{Server: "a", TaskID: "done-old", Created: t0, Updated: t0, Status: TaskFailed, Done: true}),
				PutTask(TaskRecord{Server: "a", TaskID: "working-old", Created: t0, Updated: t0, Status: TaskWorking}),
				PutTask(TaskRecord{Server: "b", TaskID: "done-new", Created: t0, Updated: t0.Add(2 * day), Status: TaskCompleted, Done: true}),
			)
			clock.Advance(tt.age)
			got, err := s.Prune()
			if err != nil {
				t.Fatal(err)
			}
			if want := (PruneResult{Tasks: tt.wantTasks}); got != want {
				t.Errorf("Prune = %+v, want %+v", got, want)
			}
			left, err := s.Tasks(TaskFilter{})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, r := range left {
				ids = append(ids, r.TaskID)
			}
			if diff := cmp.Diff(tt.wantLeft, ids, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("tasks left (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTaskReadsReportCorruptRecords(t *testing.T) {
	s := openStore(t, t.TempDir(), Options{})
	mustApply(t, s, PutTask(TaskRecord{Server: "a", TaskID: "good"}))
	txn := s.db.NewTransaction(true)
	if err := txn.Set(taskKey("b", "bad"), []byte{0xc1, 0xff}); err != nil {
		t.Fatal(err)
	}
	if err := txn.Commit(); err != nil {
		t.Fatal(err)
	}
	reads := map[string]func() error{
		"Tasks":    func() error { _, err := s.Tasks(TaskFilter{}); return err },
		"Task":     func() error { _, _, err := s.Task("b", "bad"); return err },
		"TaskByID": func() error { _, _, err := s.TaskByID("bad"); return err },
	}
	for name, read := range reads {
		err := read()
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `"t/b\x00bad"`) {
			t.Errorf("%s = %v, want ErrCorrupt naming the key", name, err)
		}
	}
	// Reads that do not reach the record are unaffected.
	if _, found, err := s.TaskByID("good"); err != nil || !found {
		t.Errorf("TaskByID(good) = %v, %v", found, err)
	}
	if got, err := s.Tasks(TaskFilter{Server: "a"}); err != nil || len(got) != 1 {
		t.Errorf("Tasks(a) = %v, %v", got, err)
	}
}

// A gateway task is put, read back, replaced by id, and pruned once its
// Expires has passed, whatever the retention options.
func TestGatewayTasks(t *testing.T) {
	clock := newFakeClock()
	s := openStore(t, t.TempDir(), Options{Now: clock.Now, HistoryRetention: -1, EventRetention: -1})
	t0 := clock.Now()
	mustApply(t, s,
		PutGatewayTask(GatewayTaskRecord{ID: "short", Tool: "mcp__a__x", Expires: t0.Add(time.Hour), Status: "working"}),
		PutGatewayTask(GatewayTaskRecord{ID: "long", Tool: "mcp__a__y", Expires: t0.Add(48 * time.Hour), Status: "working"}),
	)
	mustApply(t, s, PutGatewayTask(GatewayTaskRecord{ID: "short", Tool: "mcp__a__x", Created: t0, Expires: t0.Add(time.Hour),
		Status: "completed", Result: []byte(`{"content":[]}`)}))
	got, found, err := s.GatewayTask("short")
	if err != nil || !found || got.Status != "completed" || string(got.Result) != `{"content":[]}` || !got.Created.Equal(t0) || got.Updated.IsZero() {
		t.Fatalf("GatewayTask(short) = %+v, %v, %v", got, found, err)
	}
	if _, found, err := s.GatewayTask("none"); found || err != nil {
		t.Fatalf("GatewayTask(none): found %v, %v", found, err)
	}
	if _, err := s.Apply([]Op{PutGatewayTask(GatewayTaskRecord{ID: "bad\x00id"})}); err == nil {
		t.Fatal("an id with NUL was stored")
	}
	clock.Advance(2 * time.Hour)
	res, err := s.Prune()
	if err != nil || res.GatewayTasks != 1 {
		t.Fatalf("Prune = %+v, %v; want one gateway task pruned", res, err)
	}
	if _, found, _ := s.GatewayTask("short"); found {
		t.Error("the expired task is still there")
	}
	if _, found, _ := s.GatewayTask("long"); !found {
		t.Error("the unexpired task was pruned")
	}
}
