package member

import (
	"context"
	"encoding/json"
	"testing"
)

// answering is a Replica whose other members answer Gather as given.
type answering struct {
	Replica
	answers []Answer
}

func (a answering) Self() string { return "self" }

func (a answering) Gather(context.Context, string, any) ([]Answer, error) { return a.answers, nil }

type got struct {
	member string
	v      []int
	err    string
}

func TestGather(t *testing.T) {
	local := func() ([]int, error) { return []int{1}, nil }
	wrap := func(m string, v []int, e string) got { return got{m, v, e} }

	out, err := Gather(context.Background(), nil, OpHistory, nil, local, wrap)
	if err != nil || len(out) != 1 || out[0].member != "" || len(out[0].v) != 1 {
		t.Fatalf("outside a cluster: %+v, %v", out, err)
	}

	r := answering{answers: []Answer{
		{Member: "a", Result: json.RawMessage(`[2,3]`)},
		{Member: "b", Err: "timed out"},
		{Member: "c", Result: json.RawMessage(`{`)},
	}}
	out, err = Gather(context.Background(), r, OpHistory, nil, local, wrap)
	if err != nil || len(out) != 4 {
		t.Fatalf("in a cluster: %+v, %v", out, err)
	}
	if out[0].member != "self" || out[1].member != "a" || len(out[1].v) != 2 || out[1].err != "" {
		t.Errorf("this member and a: %+v", out[:2])
	}
	if out[2].err != "timed out" || out[3].err == "" || out[3].v != nil {
		t.Errorf("b and c carry their errors: %+v", out[2:])
	}
}
