package inbox_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/inbox"
)

func Example() {
	// No answer within a minute means no; so does the inbox closing.
	in := inbox.New(inbox.Options[string, bool]{Deadline: time.Minute})
	defer in.Close()

	// The asker's side: open the request, or Ask to open and wait.
	ticket, _ := in.Open("delete server a")

	// A person's side: a UI shows Pending (again whenever Changed fires)
	// and answers.
	for _, e := range in.Pending() {
		fmt.Println("waiting:", e.Req)
		_, _ = in.Resolve(e.ID, true)
	}

	allowed, err := ticket.Wait(context.Background())
	fmt.Println(allowed, err)
	// Output:
	// waiting: delete server a
	// true <nil>
}
