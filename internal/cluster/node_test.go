package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	pcluster "github.com/mcpvisor/mcpvisor/internal/protoactor/cluster"
	"github.com/mcpvisor/mcpvisor/internal/protoactor/cluster/clusterproviders/test"
)

// kindErr is a handler error that names its kind.
type kindErr struct{ kind, msg string }

func (e kindErr) Error() string     { return e.msg }
func (e kindErr) ErrorKind() string { return e.kind }

// testNodes starts n members on loopback with the in-process provider;
// each answers a forwarded body with "<its address>:<body>", fails
// "fail" with a kinded error, and holds "block" until cancelled.
func testNodes(t testing.TB, n int) []*Node {
	t.Helper()
	agent := test.NewInMemAgent()
	nodes := make([]*Node, n)
	var placed sync.WaitGroup
	placed.Add(n)
	for i := range n {
		var self *Node
		var once sync.Once
		cfg := Config{Name: "t", Provider: test.NewTestProvider(agent), Gossip: 50 * time.Millisecond, InsecureLoopback: true}
		cfg.Handler = func(ctx context.Context, body []byte) ([]byte, error) {
			switch string(body) {
			case `"fail"`:
				return nil, kindErr{"unavailable", "it failed"}
			case `"block"`:
				<-ctx.Done()
				return nil, ctx.Err()
			case `"chat"`:
				// Three notes, then a question for the caller, whose
				// answer is the answer.
				c := CallerOf(ctx)
				for i := range 3 {
					c.Note([]byte(strconv.Itoa(i + 1)))
				}
				return c.Ask(ctx, []byte(`"from `+self.Self()+`"`))
			}
			return []byte(`["` + self.Self() + `",` + string(body) + `]`), nil
		}
		cfg.OnPlacement = func() {
			if len(self.Members()) == n {
				once.Do(placed.Done)
			}
		}
		node, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		self = node
		if err := node.Join(); err != nil {
			t.Fatal(err)
		}
		nodes[i] = node
		t.Cleanup(node.Stop)
	}
	placed.Wait()
	return nodes
}

// Every member places every name on the same member, names spread over
// the members, and a request forwarded from any member reaches the owner.
func TestPlacementAndForward(t *testing.T) {
	nodes := testNodes(t, 3)
	owners := map[string]int{}
	for i := range 30 {
		name := fmt.Sprintf("server-%d", i)
		owner := nodes[0].Owner(name, "")
		for _, n := range nodes[1:] {
			if got := n.Owner(name, ""); got != owner {
				t.Fatalf("%s: placed on %s by one member, %s by another", name, owner, got)
			}
		}
		owners[owner]++
		for _, n := range nodes {
			got, err := n.Forward(context.Background(), owner, []byte(`"`+name+`"`), nil)
			if err != nil || string(got) != `["`+owner+`","`+name+`"]` {
				t.Fatalf("forward %s from %s to %s: %q, %v", name, n.Self(), owner, got, err)
			}
		}
	}
	if len(owners) != 3 {
		t.Errorf("30 names on %d members: %v", len(owners), owners)
	}

	// An error crosses with its kind.
	_, err := nodes[0].Forward(context.Background(), nodes[1].Self(), []byte(`"fail"`), nil)
	var re *RemoteError
	if !errors.As(err, &re) || re.Kind != "unavailable" || re.Message != "it failed" {
		t.Errorf("a failed request: %#v", err)
	}
	// A caller that gives up cancels the request on the member.
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := nodes[0].Forward(ctx, nodes[2].Self(), []byte(`"block"`), nil); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrUnreachable) {
		t.Errorf("a request past its deadline: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := nodes[2].inFlight()
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the member never cancelled the request its caller gave up")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A handler tells its caller of its progress and asks it questions while
// the request runs: the notes arrive in order, on the calling goroutine,
// before the answer; a caller with nothing to answer them with fails the
// question, not the member.
func TestCallerNotesAndAsks(t *testing.T) {
	nodes := testNodes(t, 2)
	var notes []string
	rev := &Reverse{
		OnNote: func(b []byte) { notes = append(notes, string(b)) },
		Ask: func(ctx context.Context, body []byte) ([]byte, error) {
			return []byte(`{"asked":` + string(body) + `}`), nil
		},
	}
	got, err := nodes[0].Forward(context.Background(), nodes[1].Self(), []byte(`"chat"`), rev)
	if want := `{"asked":"from ` + nodes[1].Self() + `"}`; err != nil || string(got) != want {
		t.Fatalf("answer %s, %v; want %s", got, err, want)
	}
	if !slices.Equal(notes, []string{"1", "2", "3"}) {
		t.Errorf("notes %v, want 1 2 3 before the answer", notes)
	}
	_, err = nodes[0].Forward(context.Background(), nodes[1].Self(), []byte(`"chat"`), nil)
	var re *RemoteError
	if !errors.As(err, &re) || re.Kind != KindUnanswered {
		t.Errorf("a question its caller cannot answer: %#v", err)
	}
}

// A member that leaves: the others see it go, and its names are placed
// on them; the rest keep their places.
func TestLeaveReplaces(t *testing.T) {
	nodes := testNodes(t, 3)
	before := map[string]string{}
	for i := range 30 {
		name := fmt.Sprintf("server-%d", i)
		before[name] = nodes[0].Owner(name, "")
	}
	gone := nodes[2].Self()
	start := time.Now()
	nodes[2].Stop()
	for !slices.Equal(nodes[0].Members(), sortedAddrs(nodes[:2])) || !slices.Equal(nodes[1].Members(), sortedAddrs(nodes[:2])) {
		if time.Since(start) > 20*time.Second {
			t.Fatalf("members after one left: %v and %v", nodes[0].Members(), nodes[1].Members())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the others saw the member leave in %v", time.Since(start).Round(time.Millisecond))
	for name, was := range before {
		now := nodes[0].Owner(name, "")
		if now != nodes[1].Owner(name, "") || now == gone || (was != gone && now != was) {
			t.Errorf("%s: on %s, now on %s (by the other: %s)", name, was, now, nodes[1].Owner(name, ""))
		}
	}
	if _, err := nodes[0].Forward(context.Background(), gone, []byte(`"x"`), nil); !errors.Is(err, ErrUnreachable) {
		t.Errorf("forward to the member that left: %v", err)
	}
}

func sortedAddrs(nodes []*Node) []string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Self())
	}
	slices.SortFunc(out, strings.Compare)
	return out
}

// Stop may be called twice at once (a lost member's rejoin and the host's
// Close both stop it): neither panics, and both return once the member
// has left, which the other member sees.
func TestStopTwiceConcurrently(t *testing.T) {
	nodes := testNodes(t, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(nodes[1].Stop)
	}
	wg.Wait()
	nodes[1].Stop() // and once more, after: t.Cleanup's is a fourth
	deadline := time.Now().Add(10 * time.Second)
	for len(nodes[0].Members()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("members after one stopped: %v", nodes[0].Members())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// joined is a member made of cfg that has joined its cluster, and leaves
// it when the test ends.
func joined(t *testing.T, cfg Config) *Node {
	t.Helper()
	n, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Join(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.Stop)
	return n
}

// inFlight is how many requests of the other members run here.
func (n *Node) inFlight() int {
	n.lmu.Lock()
	defer n.lmu.Unlock()
	count := 0
	for l := range n.accepted {
		l.mu.Lock()
		count += len(l.inbound)
		l.mu.Unlock()
	}
	for _, l := range n.links {
		l.mu.Lock()
		count += len(l.inbound)
		l.mu.Unlock()
	}
	return count
}

// A request in flight on a member that leaves fails as unreachable when
// the member goes, not when its caller's deadline passes; the member
// cancelled it as it left.
func TestInFlightFailsWhenMemberLeaves(t *testing.T) {
	nodes := testNodes(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := nodes[0].Forward(ctx, nodes[2].Self(), []byte(`"block"`), nil)
		done <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); nodes[2].inFlight() != 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the request never ran on the member")
		}
	}
	start := time.Now()
	nodes[2].Stop()
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnreachable) {
			t.Errorf("the request in flight on the member that left: %v", err)
		}
		t.Logf("failed %v after the member began to leave: %v", time.Since(start).Round(time.Millisecond), err)
	case <-time.After(20 * time.Second):
		t.Fatal("the request in flight on the member that left did not fail")
	}
	if n := nodes[2].inFlight(); n != 0 {
		t.Errorf("%d requests still running on the member that left", n)
	}
}

// handProvider is a membership the test hands each member: it reports
// this member and those the test tells it of (learn).
type handProvider struct {
	mu     sync.Mutex
	c      *pcluster.Cluster
	self   MemberEntry
	others []*pcluster.Member
}

func (p *handProvider) StartMember(c *pcluster.Cluster) error {
	self, err := SelfEntry(c)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.c, p.self = c, self
	ReportMembers(c, nil, self)
	return nil
}

func (p *handProvider) StartClient(*pcluster.Cluster) error { return errors.New("no clients") }
func (p *handProvider) Shutdown(bool) error                 { return nil }

// learn makes the member count other among the members.
func (p *handProvider) learn(other *handProvider) {
	other.mu.Lock()
	m := other.self.member()
	other.mu.Unlock()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.others = append(p.others, m)
	ReportMembers(p.c, slices.Clone(p.others), p.self)
}

// logSignal is a log handler that closes a channel at the first record
// whose message contains a string.
type logSignal struct {
	slog.Handler
	want string
	once *sync.Once
	seen chan struct{}
}

func (h logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h logSignal) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.want) {
		h.once.Do(func() { close(h.seen) })
	}
	return nil
}
func (h logSignal) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logSignal) WithGroup(string) slog.Handler      { return h }

// A member learns of another at its own pace (each asks its provider):
// a state gossiped to a member that does not yet count the sender among
// the members is not taken (its gate drops it, nothing answers), and is
// sent again until it is. It was lost:
// computing a delta marked it sent (protoactor patch 20), so a member
// that publishes once and then has nothing new to say, as one that runs
// no server does, was never heard, and the servers waiting for it to
// agree on the placement waited forever.
func TestStateReachesAMemberThatLearnsOfItsSenderLate(t *testing.T) {
	refused := logSignal{want: "EndpointReader dropped a message", once: new(sync.Once), seen: make(chan struct{})}
	states := make(chan string, 16)
	var pa, pb handProvider
	a, err := New(Config{Name: "t", Provider: &pa, Gossip: 20 * time.Millisecond, InsecureLoopback: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Stop)
	b, err := New(Config{Name: "t", Provider: &pb, Gossip: 20 * time.Millisecond, InsecureLoopback: true,
		Logger:  slog.New(refused),
		OnState: func(member, key string, state []byte) { states <- member + " " + key + " " + string(state) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Stop)
	if err := a.Join(); err != nil {
		t.Fatal(err)
	}
	if err := b.Join(); err != nil {
		t.Fatal(err)
	}
	pa.learn(&pb)
	a.Publish("servers", []byte(`"x"`))
	select {
	case <-refused.seen: // b has refused a's gossip
	case <-time.After(30 * time.Second):
		t.Fatal("the member that does not know the sender never refused its gossip")
	}
	pb.learn(&pa)
	want := a.Self() + ` servers "x"`
	deadline := time.After(30 * time.Second)
	for {
		select {
		case s := <-states:
			if s == want {
				return
			}
		case <-deadline:
			t.Fatalf("the state the member refused before it knew the sender never reached it (want %s)", want)
		}
	}
}
