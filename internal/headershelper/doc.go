// Package headershelper runs a remote server's headers helper (Claude
// Code's headersHelper): a command whose stdout is a JSON object of HTTP
// headers, string to string, to send with every request to the server.
//
//	h := headershelper.New([]string{"/bin/sh", "-c", `printf '{"Authorization":"Bearer %s"}' "$(get-token)"`}, nil, "", 0)
//	client := &http.Client{Transport: h.Transport(http.DefaultTransport)}
//	resp, err := client.Get(serverURL) // runs the helper, then sends its headers
//
// The helper runs on first use and again when the server answers 401; the
// request is then retried once with the new headers. Concurrent callers
// share one run, and runs are at least a second apart, so a server that
// always answers 401 cannot make the host fork in a loop.
//
// The helper's stdout holds secrets: no error from this package quotes it
// (header names that are valid tokens may be named; values never are).
// Errors quote a bounded excerpt of the helper's stderr instead. Secrets
// returns the values last obtained, for redaction in logs.
package headershelper
