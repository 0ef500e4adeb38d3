// Package elicit is the host's side of MCP elicitation (spec 2025-11-25,
// client/elicitation): a server's elicitation/create asks the person at the
// host for input, through a form built from a flat JSON schema or by sending
// them to a URL.
//
//	req, err := elicit.Parse("ssh", params) // params of elicitation/create
//	if err != nil {
//		return err // an *InvalidError: reply -32602
//	}
//	id, wait := broker.Open(req) // a UI Lists it and Resolves it
//	_ = broker.Resolve(id, elicit.ActionAccept, map[string]any{"password": entered})
//	reply := elicit.ResultJSON(<-wait) // {"action":"accept","content":{...}}
//
// The package is pure logic, with no protocol code:
//
//   - Parse decodes and checks a request, keeping the form's field order and
//     marking sensitive fields; ValidateURL vets a url-mode target, which is
//     never fetched.
//   - Request.Complete applies the schema's defaults (SEP-1034) to an accepted
//     form and checks it against the schema.
//   - Broker is the built-in inbox a person answers, with a deadline after
//     which it answers cancel; an embedder with its own UI writes a Handler
//     instead.
//   - ResultJSON encodes the ElicitResult.
//
// What a person enters may be a secret. Response's String and LogValue show
// only the action and the field names, and no error quotes a value, so
// answers can be logged and errors sent back freely; only ResultJSON carries
// the values, to the server that asked.
package elicit
