// Package inbox holds requests that wait for a person's answer. Each is
// answered exactly once: by Resolve, by its deadline, when its asker stops
// waiting, or when the inbox closes; a UI learns of every change through
// Changed.
//
//	in := inbox.New(inbox.Options[string, bool]{Deadline: time.Minute})
//	ticket, _ := in.Open("delete server a") // or in.Ask(ctx, req): open and wait
//	for _, e := range in.Pending() {        // a UI, whenever in.Changed() fires
//		_, _ = in.Resolve(e.ID, true)
//	}
//	allowed, err := ticket.Wait(ctx) // true, nil
//
// The root package's approval inbox and internal/elicit's Broker are both
// an Inbox, each with its own request and answer types.
package inbox
