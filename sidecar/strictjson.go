package sidecar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// Request bodies are decoded strictly: one JSON value, nothing after it,
// and no object that gives a key twice, at any depth. encoding/json alone
// lets the last of duplicate keys win, so a body such as
// {"tool": "a", "tool": "b"} would mean one thing to a proxy or log reader
// and another to the host; the config loader refuses such entries too.

// decodeStrict decodes the JSON value in data into v, refusing trailing
// data and duplicate keys. Its errors read after "request body: ".
func decodeStrict(data []byte, v any) error {
	end, err := checkStrict(data)
	if err != nil {
		return err
	}
	return json.Unmarshal(data[:end], v)
}

// checkStrict reports whether data holds exactly one JSON value (blanks
// around it aside) with no object giving a key twice; end is where the
// value ends.
func checkStrict(data []byte) (end int, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var value json.RawMessage
	if err := dec.Decode(&value); err != nil {
		if errors.Is(err, io.EOF) {
			return 0, errors.New("empty")
		}
		return 0, fmt.Errorf("not valid JSON: %v", err)
	}
	end = int(dec.InputOffset())
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("trailing data after the JSON value, at byte %d: a body holds one value", end)
	}
	return end, duplicateKey(value)
}

// jsonLevel is an object or array being walked by duplicateKey.
type jsonLevel struct {
	path    string
	object  bool
	keys    map[string]struct{} // an object's keys so far
	key     string              // an object's current key
	wantKey bool                // an object's next token is a key
	index   int                 // an array's current element
}

// child is the path of the level's current member or element.
func (l *jsonLevel) child() string {
	if !l.object {
		return l.path + "[" + strconv.Itoa(l.index) + "]"
	}
	if l.path == "" {
		return l.key
	}
	return l.path + "." + l.key
}

// duplicateKey returns an error naming the first key an object of the
// well-formed JSON value gives twice, with the object's path
// (arguments.items[2]), or nil. Keys are compared decoded, so "a" and
// "\u0061" are the same key, as they are to every JSON reader.
func duplicateKey(value []byte) error {
	dec := json.NewDecoder(bytes.NewReader(value))
	var stack []*jsonLevel
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		var top *jsonLevel
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				advance(stack)
				continue
			}
			key, _ := tok.(string)
			if _, dup := top.keys[key]; dup {
				where := "the top-level object"
				if top.path != "" {
					where = "the object at " + top.path
				}
				return fmt.Errorf("key %q is given more than once in %s", key, where)
			}
			top.keys[key] = struct{}{}
			top.key, top.wantKey = key, false
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			path := ""
			if top != nil {
				path = top.child()
			}
			l := &jsonLevel{path: path, object: tok == json.Delim('{'), wantKey: true}
			if l.object {
				l.keys = map[string]struct{}{}
			}
			stack = append(stack, l)
			continue
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		advance(stack)
	}
}

// advance moves the innermost level past the value just read.
func advance(stack []*jsonLevel) {
	if len(stack) == 0 {
		return
	}
	if top := stack[len(stack)-1]; top.object {
		top.wantKey = true
	} else {
		top.index++
	}
}
