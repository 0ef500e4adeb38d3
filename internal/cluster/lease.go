package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// What the Consul and Kubernetes memberships share: a place held by
// renewing it, and a small JSON REST client.

// renewUntilLost renews a member's place every third of ttl until ctx ends
// (nil) or the place is lost, which it returns: no renewal answered for
// two thirds of ttl (a renewal still pending then counts as missed, so a
// request hanging on a cut network does not delay the fencing), or one
// answered with an error gone says is final. The others drop a member
// after ttl at the earliest: one that counts itself lost first has
// stopped its servers by then.
func renewUntilLost(ctx context.Context, ttl time.Duration, renew func(context.Context) error, gone func(error) bool, retry func(error)) error {
	limit := ttl * 2 / 3
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		left := time.Until(last.Add(limit))
		if left <= 0 {
			return fmt.Errorf("no renewal answered for %v", time.Since(last).Round(time.Millisecond))
		}
		rctx, cancel := context.WithTimeout(ctx, left)
		err := renew(rctx)
		cancel()
		switch {
		case err == nil:
			last = time.Now()
		case ctx.Err() != nil:
			return nil
		case gone(err):
			return err
		default:
			retry(err)
		}
	}
}

// restAPI is a JSON HTTP API.
type restAPI struct {
	name   string // for errors: "consul", "kubernetes API"
	client *http.Client
	auth   func(*http.Request) error // sets the credentials of each request
}

// statusError is an API's answer other than success.
type statusError struct {
	api  string
	code int
	msg  string
}

func (e *statusError) Error() string {
	return fmt.Sprintf("%s: %d %s: %s", e.api, e.code, http.StatusText(e.code), e.msg)
}

// isStatus reports whether err is an answer with one of codes.
func isStatus(err error, codes ...int) bool {
	var se *statusError
	if !errors.As(err, &se) {
		return false
	}
	for _, c := range codes {
		if se.code == c {
			return true
		}
	}
	return false
}

// do sends one request; out, when set, takes the JSON answer. It returns
// the answer's header, that of an error answer too.
func (a *restAPI) do(ctx context.Context, method, url string, in, out any) (http.Header, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	if err := a.auth(req); err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(b))
		var st struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(b, &st) == nil && st.Message != "" {
			msg = st.Message
		}
		return resp.Header, &statusError{api: a.name, code: resp.StatusCode, msg: msg}
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return nil, fmt.Errorf("%s answered %.200q: %w", a.name, b, err)
		}
	}
	return resp.Header, nil
}
