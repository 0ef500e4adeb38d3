package actors

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
)

// Callers that send while the server has earlier requests to answer share
// write calls (send yields, then writes what others queued meanwhile with
// its own frame), and every frame reaches stdin whole, once: through
// partial writes to a pipe with little room, and although each caller
// writes over its frame's buffer as soon as send returns (a recycled call
// message reuses it), as no connection may keep a frame once sent.
func TestStdioBusySendsArriveWhole(t *testing.T) {
	const callers, perCaller = 16, 20
	in := newMemPipe(100) // less than a frame: writes are partial
	out := newMemPipe(0)
	spec := ServerSpec{Name: "s"}.WithDefaults()
	c := newStdioConn(1, &spec, in, out, func(context.Context) {
		in.closeRead()
		out.closeRead()
	}, func(any) {}, nil)
	t.Cleanup(func() { c.close(context.Background()) })
	for range leadMaxPending + 1 {
		if _, err := c.pending().add(&pendingReq{kind: reqToolsList}); err != nil {
			t.Fatal(err)
		}
	}

	var want []string
	for i := range callers {
		for j := range perCaller {
			want = append(want, fmt.Sprintf(`{"jsonrpc":"2.0","id":"%d-%d","method":"tools/call","params":{"name":"echo","arguments":{"pad":"%s"}}}`, i, j, bytes.Repeat([]byte{'a' + byte(i)}, 40+j)))
		}
	}
	total := 0
	for _, f := range want {
		total += len(f) + 1
	}
	got := make(chan []byte, 1)
	go func() {
		b := make([]byte, 0, total)
		buf := make([]byte, 128)
		for len(b) < total {
			n, err := in.Read(buf)
			b = append(b, buf[:n]...)
			if err != nil && err != io.EOF {
				break
			}
		}
		got <- b
	}()

	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			for j := range perCaller {
				// Room to spare, as a call's frame buffer has.
				frame := append(make([]byte, 0, 1024), want[i*perCaller+j]...)
				if err := c.send(requestOut(int64(i*perCaller+j), "tools/call", frame)); err != nil {
					t.Error(err)
					return
				}
				for k := range frame {
					frame[k] = 'X' // the buffer is the caller's again
				}
			}
		})
	}
	wg.Wait()
	b := <-got
	lines := lineStrings(bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")))
	if len(lines) != len(want) {
		t.Fatalf("%d lines reached stdin, want %d", len(lines), len(want))
	}
	// One caller's frames arrive in the order it sent them.
	next := make(map[string]int)
	for _, l := range lines {
		var i, j int
		if _, err := fmt.Sscanf(l, `{"jsonrpc":"2.0","id":"%d-%d"`, &i, &j); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if k := fmt.Sprint(i); next[k] != j {
			t.Fatalf("caller %d's frame %d arrived before its frame %d", i, j, next[k])
		} else {
			next[k]++
		}
	}
	slices.Sort(lines)
	sorted := slices.Clone(want)
	slices.Sort(sorted)
	for i := range lines {
		if lines[i] != sorted[i] {
			t.Fatalf("line %q reached stdin, want %q", lines[i], sorted[i])
		}
	}
}

func lineStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}
