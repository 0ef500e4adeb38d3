package secrets

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
)

// The OAuth section holds the tokens and client registrations of servers,
// each a JSON document, by key: the server's name, or the server's name, a
// NUL byte and a user. The store reads nothing into a key but the server's
// name before the first NUL, which KeepOnly and DropOAuth go by.

// oauthServer returns the server a key of the OAuth section belongs to.
func oauthServer(key string) string {
	server, _, _ := strings.Cut(key, "\x00")
	return server
}

// compactJSON returns b compacted, or nil if it is empty or not JSON.
func compactJSON(b []byte) json.RawMessage {
	var buf bytes.Buffer
	if len(b) == 0 || json.Compact(&buf, b) != nil {
		return nil
	}
	return buf.Bytes()
}

// LoadOAuth returns the JSON document saved under key (compacted), or nil
// when there is none. The result is the caller's to keep.
func (s *Store) LoadOAuth(key string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.oauth[key]; ok {
		return bytes.Clone(b), nil
	}
	return nil, nil
}

// SaveOAuth stores the JSON document b under key, durably before it
// returns; a nil or empty b deletes the entry. Saving what is already
// there (up to insignificant whitespace) writes nothing. b that is not JSON
// is an error and changes nothing.
func (s *Store) SaveOAuth(key string, b []byte) error {
	var doc json.RawMessage
	if len(b) > 0 {
		if doc = compactJSON(b); doc == nil {
			return fmt.Errorf("secrets: oauth %q: not a JSON document", oauthServer(key))
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, had := s.oauth[key]
	if (doc == nil && !had) || (had && bytes.Equal(old, doc)) {
		return nil
	}
	next := maps.Clone(s.oauth)
	if doc == nil {
		delete(next, key)
	} else {
		next[key] = doc
	}
	c := s.content()
	c.OAuth = next
	if err := s.write(c); err != nil {
		return err
	}
	s.oauth = next
	return nil
}

// DropOAuth removes every OAuth entry of server (its own and its users'),
// durably, as on sign-out or when the server is deleted. A server with
// none writes nothing.
func (s *Store) DropOAuth(server string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	next := maps.Clone(s.oauth)
	maps.DeleteFunc(next, func(key string, _ json.RawMessage) bool { return oauthServer(key) == server })
	if len(next) == len(s.oauth) {
		return nil
	}
	c := s.content()
	c.OAuth = next
	if err := s.write(c); err != nil {
		return err
	}
	s.oauth = next
	return nil
}
