package persistence

import (
	"fmt"
	"strings"
)

// maxNameLen bounds every name that goes into a key, well under badger's
// 65,000-byte key limit, so an oversized name fails validation rather than
// half-way through a split batch.
const maxNameLen = 4096

type opKind uint8

const (
	opPutServer opKind = iota + 1
	opDeleteServer
	opPutCatalog
	opAppendEvent
	opAckEvents
	opPutGrant
	opDeleteGrants
	opAppendHistory
	opPutTask
	opDeleteTask
	opPutGatewayTask
	opPutContainment
	opDeleteContainment
	opPutPin
)

var opNames = [...]string{
	opPutServer:         "put server",
	opDeleteServer:      "delete server",
	opPutCatalog:        "put catalog",
	opAppendEvent:       "append event",
	opAckEvents:         "ack events",
	opPutGrant:          "put grant",
	opDeleteGrants:      "delete grants",
	opAppendHistory:     "append history",
	opPutTask:           "put task",
	opDeleteTask:        "delete task",
	opPutGatewayTask:    "put gateway task",
	opPutContainment:    "put containment",
	opDeleteContainment: "delete containment",
	opPutPin:            "put pin",
}

// Op is one change for Apply, built by PutServer, AppendEvent and the other
// constructors. The zero Op is invalid.
type Op struct {
	kind    opKind
	name    string // opDeleteServer, opDeleteTask (the server)
	taskID  string // opDeleteTask
	scope   Scope  // opDeleteGrants
	ids     []uint64
	server  *ServerRecord
	catalog *CatalogRecord
	event   *EventRecord
	grant   *GrantRecord
	history *HistoryRecord
	task    *TaskRecord
	gwTask  *GatewayTaskRecord
	contain *ContainmentRecord
	pin     *PinRecord
}

// PutServer upserts r by r.Name.
func PutServer(r ServerRecord) Op { return Op{kind: opPutServer, server: &r} }

// DeleteServer deletes the server row, its catalog and its pins.
func DeleteServer(name string) Op { return Op{kind: opDeleteServer, name: name} }

// PutCatalog upserts r by r.Server.
func PutCatalog(r CatalogRecord) Op { return Op{kind: opPutCatalog, catalog: &r} }

// AppendEvent appends r as a pending event; Apply assigns its Seq. A zero
// Received is set to Now.
func AppendEvent(r EventRecord) Op { return Op{kind: opAppendEvent, event: &r} }

// AckEvents marks events processed at Now. Events already processed count
// as acked and are left unchanged; unknown ids are reported in
// Applied.UnknownAcks, not as an error.
func AckEvents(ids ...uint64) Op {
	return Op{kind: opAckEvents, ids: append([]uint64(nil), ids...)}
}

// PutGrant upserts r by (scope, group). When the grant is new it also
// appends a HistoryGrant record at r.Granted (Now when zero).
func PutGrant(r GrantRecord) Op { return Op{kind: opPutGrant, grant: &r} }

// DeleteGrants deletes the grants of one frame (scope.Stack != "") or of
// the whole session, its frames' included (scope.Stack == ""), appending a
// HistoryRevoke record at Now for each grant deleted.
func DeleteGrants(scope Scope) Op { return Op{kind: opDeleteGrants, scope: scope} }

// AppendHistory appends r; Apply assigns its Seq. A zero Time is set to Now.
func AppendHistory(r HistoryRecord) Op { return Op{kind: opAppendHistory, history: &r} }

// AppendHistoryOf is AppendHistory without copying *r: for a writer that
// keeps its queued records in place (the journal's, one per call), the
// copy was an allocation per record. *r must not change until the Apply
// that takes the op has returned; Apply leaves it as it is.
func AppendHistoryOf(r *HistoryRecord) Op { return Op{kind: opAppendHistory, history: r} }

// PutTask upserts r by (r.Server, r.TaskID). A zero Created or Updated is
// set to Now. Prune deletes the record once it is Done and its Updated is
// older than HistoryRetention.
func PutTask(r TaskRecord) Op { return Op{kind: opPutTask, task: &r} }

// PutGatewayTask upserts r by r.ID. A zero Created or Updated is the
// apply time.
func PutGatewayTask(r GatewayTaskRecord) Op { return Op{kind: opPutGatewayTask, gwTask: &r} }

// DeleteTask deletes the task record; deleting one that does not exist is
// not an error.
func DeleteTask(server, taskID string) Op {
	return Op{kind: opDeleteTask, name: server, taskID: taskID}
}

// PutContainment upserts r by r.ID.
func PutContainment(r ContainmentRecord) Op { return Op{kind: opPutContainment, contain: &r} }

// DeleteContainment deletes the containment record id; deleting one that
// does not exist is not an error.
func DeleteContainment(id string) Op { return Op{kind: opDeleteContainment, name: id} }

func (op Op) String() string {
	if int(op.kind) < len(opNames) && opNames[op.kind] != "" {
		return opNames[op.kind]
	}
	return "invalid op"
}

// validate checks what goes into keys: names present where a key needs
// them, no NUL (the key separator), bounded length.
func (op Op) validate() error {
	switch op.kind {
	case opPutServer:
		return checkName("server name", op.server.Name, true)
	case opDeleteServer:
		return checkName("server name", op.name, true)
	case opPutCatalog:
		return checkName("catalog server", op.catalog.Server, true)
	case opAppendEvent, opAckEvents:
		return nil
	case opPutGrant:
		return checkGrant(op.grant.Scope, op.grant.Group, true)
	case opDeleteGrants:
		return checkGrant(op.scope, "", false)
	case opAppendHistory:
		h := op.history
		if err := checkName("history kind", string(h.Kind), true); err != nil {
			return err
		}
		if h.Kind == HistoryGrant || h.Kind == HistoryRevoke {
			return checkGrant(h.Scope, h.Group, true)
		}
		return nil
	case opPutTask:
		return checkTask(op.task.Server, op.task.TaskID)
	case opPutGatewayTask:
		return checkName("gateway task id", op.gwTask.ID, true)
	case opDeleteTask:
		return checkTask(op.name, op.taskID)
	case opPutContainment:
		return checkName("containment id", op.contain.ID, true)
	case opDeleteContainment:
		return checkName("containment id", op.name, true)
	case opPutPin:
		if err := checkName("pin server", op.pin.Server, true); err != nil {
			return err
		}
		return checkName("pin tool", op.pin.Tool, true)
	default:
		return fmt.Errorf("zero Op: %w", ErrInvalidRecord)
	}
}

func checkTask(server, taskID string) error {
	if err := checkName("task server", server, true); err != nil {
		return err
	}
	return checkName("task id", taskID, true)
}

func checkGrant(scope Scope, group string, needGroup bool) error {
	if err := checkName("scope session", scope.Session, true); err != nil {
		return err
	}
	if err := checkName("scope stack", scope.Stack, false); err != nil {
		return err
	}
	return checkName("group", group, needGroup)
}

func checkName(what, v string, required bool) error {
	switch {
	case required && v == "":
		return fmt.Errorf("%s is empty: %w", what, ErrInvalidRecord)
	case strings.IndexByte(v, 0) >= 0:
		return fmt.Errorf("%s %q contains a NUL byte: %w", what, v, ErrInvalidRecord)
	case len(v) > maxNameLen:
		return fmt.Errorf("%s is %d bytes, over %d: %w", what, len(v), maxNameLen, ErrInvalidRecord)
	}
	return nil
}
