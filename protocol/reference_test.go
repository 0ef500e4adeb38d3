package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
)

// referenceClassify is Classify written the obvious way with encoding/json:
// slow, but its agreement with Classify is what the fuzz test checks.
func referenceClassify(frame []byte) (Message, error) {
	var msg Message
	bad := errors.New("reference: invalid")
	if !json.Valid(frame) {
		return msg, bad
	}
	trimmed := bytes.Trim(frame, " \t\r\n")
	if trimmed[0] != '{' {
		return msg, bad
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if _, err := dec.Token(); err != nil {
		return msg, err
	}
	members := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return msg, err
		}
		key := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return msg, err
		}
		switch key {
		case "jsonrpc", "id", "method", "params", "result", "error":
			if _, dup := members[key]; dup {
				return msg, bad
			}
			members[key] = raw
		}
	}
	var version string
	if v, ok := members["jsonrpc"]; !ok || json.Unmarshal(v, &version) != nil || version != "2.0" {
		return msg, bad
	}
	id, hasID := members["id"]
	if hasID {
		var s string
		var n json.Number
		if json.Unmarshal(id, &s) != nil && json.Unmarshal(id, &n) != nil && string(id) != "null" {
			return msg, bad
		}
	}
	params := members["params"]
	if string(params) == "null" {
		params = nil
	}
	errObj, hasError := members["error"]
	if string(errObj) == "null" {
		errObj, hasError = nil, false
	}
	result, hasResult := members["result"]
	if rawMethod, ok := members["method"]; ok {
		var method string
		if json.Unmarshal(rawMethod, &method) != nil || hasResult || hasError {
			return msg, bad
		}
		msg.Method, msg.Params = method, params
		if !hasID {
			msg.Kind = KindNotification
			return msg, nil
		}
		if string(id) == "null" {
			return msg, bad
		}
		msg.Kind, msg.ID = KindRequest, id
		return msg, nil
	}
	switch {
	case hasResult && !hasError:
		if !hasID || string(id) == "null" {
			return msg, bad
		}
		msg.Kind, msg.ID, msg.Result = KindResponse, id, result
	case hasError && !hasResult:
		var e Error
		if errObj[0] != '{' || json.Unmarshal(errObj, &e) != nil {
			return msg, bad
		}
		msg.Kind, msg.Error = KindResponse, &e
		if hasID {
			msg.ID = id
		}
	default:
		return msg, bad
	}
	return msg, nil
}
