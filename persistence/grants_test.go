package persistence

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestPutGrantTwiceRecordsOneGrant(t *testing.T) {
	clock := newFakeClock()
	s := openStore(t, t.TempDir(), Options{Now: clock.Now})
	g := GrantRecord{Scope: Scope{Session: "s1"}, Group: "github", Granted: clock.Now()}
	first := mustApply(t, s, PutGrant(g))
	clock.Advance(time.Minute)
	second := mustApply(t, s, PutGrant(g), PutGrant(g))

	if len(first.Granted) != 1 || len(first.History) != 1 {
		t.Fatalf("first PutGrant: Granted %v, History %v; want one of each", first.Granted, first.History)
	}
	if len(second.Granted) != 0 || len(second.History) != 0 {
		t.Errorf("repeated PutGrant: Granted %v, History %v; want none", second.Granted, second.History)
	}
	want := HistoryRecord{V: 1, Seq: 1, Time: g.Granted, Kind: HistoryGrant, Scope: g.Scope, Group: "github"}
	hist, err := s.History(HistoryFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]HistoryRecord{want}, hist); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	grants, err := s.Grants()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]GrantRecord{withV(g)}, grants); diff != "" {
		t.Errorf("grants (-want +got):\n%s", diff)
	}
}

func TestDeleteGrants(t *testing.T) {
	grant := func(session, stack, group string) GrantRecord {
		return GrantRecord{V: 1, Scope: Scope{Session: session, Stack: stack}, Group: group, Granted: time.Unix(100, 0).UTC()}
	}
	all := []GrantRecord{
		grant("s1", "", "config"),
		grant("s1", "", "github"),
		grant("s1", "f1", "github"),
		grant("s1", "f1", "slack"),
		grant("s1", "f2", "github"),
		grant("s10", "", "github"), // a session whose name extends "s1"
		grant("s2", "f1", "github"),
	}
	tests := []struct {
		name        string
		scope       Scope
		wantRevoked []GrantRecord
		wantLeft    []GrantRecord
	}{
		{"frame", Scope{Session: "s1", Stack: "f1"}, all[2:4], append(append([]GrantRecord{}, all[:2]...), all[4:]...)},
		{"session with its frames", Scope{Session: "s1"}, all[:5], all[5:]},
		{"unknown session", Scope{Session: "s3"}, nil, all},
		{"frame name that prefixes another", Scope{Session: "s1", Stack: "f"}, nil, all},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			s := openStore(t, t.TempDir(), Options{Now: clock.Now})
			var ops []Op
			for _, g := range all {
				ops = append(ops, PutGrant(g))
			}
			mustApply(t, s, ops...)
			revokedAt := clock.Advance(time.Hour)

			res := mustApply(t, s, DeleteGrants(tt.scope))
			if diff := cmp.Diff(tt.wantRevoked, res.Revoked); diff != "" {
				t.Errorf("Revoked (-want +got):\n%s", diff)
			}
			var wantHistory []HistoryRecord
			for i, g := range tt.wantRevoked {
				wantHistory = append(wantHistory, HistoryRecord{
					V: 1, Seq: uint64(len(all) + 1 + i), Time: revokedAt, Kind: HistoryRevoke, Scope: g.Scope, Group: g.Group,
				})
			}
			if diff := cmp.Diff(wantHistory, res.History); diff != "" {
				t.Errorf("Applied.History (-want +got):\n%s", diff)
			}
			stored, err := s.History(HistoryFilter{Kind: HistoryRevoke})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantHistory, stored); diff != "" {
				t.Errorf("stored revoke history (-want +got):\n%s", diff)
			}
			left, err := s.Grants()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantLeft, left); diff != "" {
				t.Errorf("grants left (-want +got):\n%s", diff)
			}
		})
	}
}

func TestGrantsWithinOneBatch(t *testing.T) {
	clock := newFakeClock()
	s := openStore(t, t.TempDir(), Options{Now: clock.Now})
	g := GrantRecord{Scope: Scope{Session: "s", Stack: "f"}, Group: "a"}
	res := mustApply(t, s, PutGrant(g), DeleteGrants(Scope{Session: "s"}), PutGrant(g), PutGrant(g))
	var kinds []HistoryKind
	for _, h := range res.History {
		kinds = append(kinds, h.Kind)
	}
	if diff := cmp.Diff([]HistoryKind{HistoryGrant, HistoryRevoke, HistoryGrant}, kinds); diff != "" {
		t.Errorf("history kinds (-want +got):\n%s", diff)
	}
	grants, _ := s.Grants()
	if len(grants) != 1 || !grants[0].Granted.Equal(clock.Now()) {
		t.Errorf("grants = %+v, want the one re-granted at Now", grants)
	}
}

func TestAccessAt(t *testing.T) {
	t0 := time.Date(2025, 5, 1, 9, 0, 0, 0, time.UTC)
	at := func(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }
	clock := newFakeClock()
	s := openStore(t, t.TempDir(), Options{Now: clock.Now})

	root, frame, other := Scope{Session: "s1"}, Scope{Session: "s1", Stack: "f1"}, Scope{Session: "s2"}
	mustApply(t, s,
		PutGrant(GrantRecord{Scope: root, Group: "github", Granted: at(0)}),
		PutGrant(GrantRecord{Scope: frame, Group: "github", Granted: at(10)}),
		PutGrant(GrantRecord{Scope: other, Group: "github", Granted: at(15)}),
		PutGrant(GrantRecord{Scope: frame, Group: "slack", Granted: at(10)}),
	)
	clock.Advance(at(20).Sub(clock.Now()))
	mustApply(t, s, DeleteGrants(frame)) // revoked at 20
	clock.Advance(10 * time.Minute)
	mustApply(t, s, DeleteGrants(root)) // s1 revoked at 30
	mustApply(t, s, PutGrant(GrantRecord{Scope: root, Group: "github", Granted: at(40)}))

	tests := []struct {
		name  string
		group string
		at    time.Time
		want  []Scope
	}{
		{"before any grant", "github", at(-1), nil},
		{"at the first grant", "github", at(0), []Scope{root}},
		{"between grants", "github", at(5), []Scope{root}},
		{"frame and other session", "github", at(15), []Scope{root, frame, other}},
		{"at the frame's revoke", "github", at(20), []Scope{root, other}},
		{"after the session's revoke", "github", at(35), []Scope{other}},
		{"re-granted", "github", at(40), []Scope{root, other}},
		{"another group", "slack", at(12), []Scope{frame}},
		{"another group after revoke", "slack", at(25), nil},
		{"unknown group", "nope", at(12), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.AccessAt(tt.group, tt.at)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("AccessAt(%s, %v) (-want +got):\n%s", tt.group, tt.at, diff)
			}
		})
	}
}
