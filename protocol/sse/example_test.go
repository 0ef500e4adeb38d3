package sse_test

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/protocol/sse"
)

func Example() {
	// A Streamable HTTP server answers a POST with an event stream: a
	// priming event, a server request, then an oversized notification. The
	// Reader stops reading at the limit; the caller closes the body and
	// resumes with GET and Last-Event-ID past the event it dropped.
	body := io.NopCloser(strings.NewReader("id: 0\nretry: 1500\ndata:\n\n" +
		": keep-alive\n\n" +
		"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"ping\"}\n\n" +
		"id: 2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"data\":\"" + strings.Repeat("x", 200) + "\"}}\n\n" +
		"id: 3\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\n" +
		"data:  \"result\":{}}\n\n"))
	defer body.Close()
	events := sse.NewReader(body, 128)
	var lastID string
	for {
		ev, err := events.Next()
		var tooLarge *sse.TooLargeError
		if errors.As(err, &tooLarge) {
			fmt.Println("cut:", err)
			if tooLarge.HasEventID {
				lastID = tooLarge.EventID
			}
			body.Close() // drops the connection: the rest is never read
			continue
		}
		if err != nil {
			fmt.Println("end:", err)
			break
		}
		if ev.HasID {
			lastID = ev.ID
		}
		if len(ev.Data) == 0 {
			fmt.Printf("priming: id %q, retry %v\n", ev.ID, ev.Retry)
			continue
		}
		msg, err := protocol.Classify(ev.Data)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s %s (event %q)\n", msg.Kind, ev.Data, ev.ID)
	}
	fmt.Println("Last-Event-ID:", lastID)
	// Output:
	// priming: id "0", retry 1.5s
	// request {"jsonrpc":"2.0","id":"s1","method":"ping"} (event "1")
	// cut: sse event too large: at least 129 bytes, limit 128
	// end: sse: stream abandoned after an oversized event
	// Last-Event-ID: 2
}
