package protocol_test

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/mcpvisor/mcpvisor/protocol"
)

func Example() {
	// The host sends a tool call...
	frame := protocol.AppendCallTool(nil, 7, "read_file", json.RawMessage(`{"path":"README.md"}`), nil)
	fmt.Printf("%s\n", frame)

	// ...and reads the server's stdout: a banner, a request of the server's
	// own, then the answer.
	stdout := strings.NewReader("starting server v1.2\n" +
		`{"jsonrpc":"2.0","id":"s1","method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"# mcpvisor"}]}}` + "\n")
	fr := protocol.NewFrameReader(stdout, 0)
	for {
		in, err := fr.ReadFrame()
		if err == io.EOF {
			break
		}
		msg, err := protocol.Classify(in)
		if err != nil {
			fmt.Println("skipped:", err)
			continue
		}
		switch msg.Kind {
		case protocol.KindRequest:
			fmt.Printf("%s %s -> %s\n", msg.Kind, msg.Method, protocol.AppendResult(nil, msg.ID, nil))
		case protocol.KindResponse:
			id, _ := msg.IntID()
			var res protocol.CallToolResult
			if err := json.Unmarshal(msg.Result, &res); err != nil {
				panic(err)
			}
			fmt.Printf("%s to %d: %s\n", msg.Kind, id, res.Content[0].Text)
		}
	}
	// Output:
	// {"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"README.md"}}}
	// skipped: invalid json-rpc message: not a json object
	// request ping -> {"jsonrpc":"2.0","id":"s1","result":{}}
	// response to 7: # mcpvisor
}

func ExampleCheckVersion() {
	for _, v := range []string{"2025-11-25", "2025-03-26", "2099-01-01"} {
		older, err := protocol.CheckVersion(v)
		fmt.Println(v, older, err)
	}
	// Output:
	// 2025-11-25 false <nil>
	// 2025-03-26 true <nil>
	// 2099-01-01 false unsupported protocol version: "2099-01-01" (supported: 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05)
}
