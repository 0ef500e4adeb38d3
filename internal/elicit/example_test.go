package elicit_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpvisor/mcpvisor/internal/elicit"
)

func Example() {
	params := json.RawMessage(`{
		"message": "Enter sudo password",
		"requestedSchema": {
			"type": "object",
			"properties": {
				"password": {"type": "string", "format": "password"},
				"remember": {"type": "boolean", "default": false}
			},
			"required": ["password"]
		}
	}`)
	req, err := elicit.Parse("ssh", params)
	if err != nil {
		fmt.Println("reply -32602:", err)
		return
	}

	broker := elicit.NewBroker(elicit.BrokerOptions{})
	defer broker.Close()
	id, wait := broker.Open(req)

	// A UI shows broker.List(), masks the sensitive fields, and answers.
	pending, _ := broker.Get(id)
	fmt.Println(pending.Server, "asks:", pending.Message, "- masked:", pending.Sensitive())
	// An invalid answer leaves the request pending, for the person to fix.
	var invalid *elicit.InvalidError
	if err := broker.Resolve(id, elicit.ActionAccept, map[string]any{}); errors.As(err, &invalid) {
		fmt.Println("show the person:", invalid.Field, invalid.Reason)
	}
	if err := broker.Resolve(id, elicit.ActionAccept, map[string]any{"password": "hunter2"}); err != nil {
		fmt.Println(err)
	}

	resp := <-wait
	fmt.Println("log:", resp)
	fmt.Println("reply:", string(elicit.ResultJSON(resp)))
	// Output:
	// ssh asks: Enter sudo password - masked: [password]
	// show the person: password is required
	// log: accept [password remember]
	// reply: {"action":"accept","content":{"password":"hunter2","remember":false}}
}
