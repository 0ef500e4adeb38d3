package persistence_test

import (
	"fmt"
	"log"
	"os"
	"time"

	"github.com/mcpvisor/mcpvisor/persistence"
)

// A journal takes batches of ops and returns once they are durable; seqs
// are assigned at commit.
func Example() {
	dir, err := os.MkdirTemp("", "journal")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	res, err := s.Apply([]persistence.Op{
		persistence.PutServer(persistence.ServerRecord{Name: "github", Origin: persistence.OriginConfig, Transport: "stdio", Enabled: true}),
		persistence.AppendEvent(persistence.EventRecord{Server: "github", Method: "notifications/tools/list_changed"}),
		persistence.AppendEvent(persistence.EventRecord{Server: "github", Method: "notifications/message", Params: []byte(`{"data":"hi"}`)}),
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range res.Events {
		fmt.Println("appended", e.Seq, e.Method, e.Status)
	}

	if _, err := s.Apply([]persistence.Op{persistence.AckEvents(res.Events[0].Seq, 99)}); err != nil {
		log.Fatal(err)
	}
	pending, err := s.Events(persistence.EventFilter{Status: persistence.EventPending})
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range pending {
		fmt.Println("pending", e.Seq, e.Method)
	}
	fmt.Println("pending count", s.Stats().PendingEvents)
	// Output:
	// appended 1 notifications/tools/list_changed pending
	// appended 2 notifications/message pending
	// pending 2 notifications/message
	// pending count 1
}

// Grants and revokes are recorded in the history, so who could use a group
// at any past instant can be answered.
func ExampleStore_AccessAt() {
	dir, err := os.MkdirTemp("", "journal")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	s, err := persistence.Open(dir, persistence.Options{Now: func() time.Time { return now }})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	root := persistence.Scope{Session: "s1"}
	sub := persistence.Scope{Session: "s1", Stack: "agent-2"}
	apply := func(ops ...persistence.Op) {
		if _, err := s.Apply(ops); err != nil {
			log.Fatal(err)
		}
	}
	apply(persistence.PutGrant(persistence.GrantRecord{Scope: root, Group: "github"}),
		persistence.PutGrant(persistence.GrantRecord{Scope: sub, Group: "github"}))
	now = now.Add(time.Hour)
	apply(persistence.DeleteGrants(sub)) // the sub-agent's frame ended

	for _, at := range []time.Time{now.Add(-30 * time.Minute), now} {
		scopes, err := s.AccessAt("github", at)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(at.Format(time.Kitchen), scopes)
	}
	// Output:
	// 12:30PM [{s1 } {s1 agent-2}]
	// 1:00PM [{s1 }]
}
