package protocol

import (
	"encoding/json"
	"strconv"
)

// Kind is the shape of a classified frame.
type Kind uint8

const (
	KindInvalid Kind = iota
	KindRequest
	KindNotification
	KindResponse
)

func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Message is one classified frame.
//
// ID, Params and Result alias the frame passed to Classify: they stay valid
// only as long as the frame is not modified, and they are the frame's exact
// bytes (an id is echoed back byte for byte). Method is a string (one of the
// Method constants for known methods, otherwise a copy), and Error is decoded
// into memory of its own.
type Message struct {
	Kind Kind
	// ID is the raw id of a request or response: a JSON string or number.
	// It is nil for notifications and for an error response without an id,
	// and the bytes null for an error response with "id": null.
	ID json.RawMessage
	// Method is set for requests and notifications.
	Method string
	// Params is the raw params of a request or notification; nil when absent
	// or null.
	Params json.RawMessage
	// Result is the raw result of a successful response.
	Result json.RawMessage
	// Error is the error of an error response.
	Error *Error
}

// Indexes of the members Classify looks at.
const (
	memberVersion = iota
	memberID
	memberMethod
	memberParams
	memberResult
	memberError
	memberCount
)

// Classify decodes the top level of one frame and classifies it by its shape:
//
//   - "method" and "id": a request (the id must be a string or number);
//   - "method" without "id": a notification;
//   - no "method", "id" and exactly one of "result" and "error": a response.
//     An error response may carry "id": null or no id at all, which the peer
//     sends when it could not read the request's id.
//
// A request from the server is never a response, whatever its id: a frame
// with "method" and also "result" or "error" is invalid.
//
// Everything else is an error wrapping ErrInvalidMessage with a short reason:
// a frame that is not exactly one JSON object (a banner line, a batch array,
// trailing bytes), a "jsonrpc" member other than "2.0", both or neither of
// "result" and "error", a known member given twice. "error": null counts as
// absent, as does "params": null; unknown members are ignored. The whole frame
// is checked to be JSON that encoding/json accepts, but params, result and
// the error's data are not decoded.
//
// Classify allocates nothing for a valid request, notification with a known
// method, or result response; an error response allocates its Error.
func Classify(frame []byte) (Message, error) {
	var msg Message
	var members [memberCount][]byte
	i := skipSpace(frame, 0)
	if i == len(frame) {
		return msg, errEmpty
	}
	switch frame[i] {
	case '{':
	case '[':
		return msg, errBatch
	default:
		return msg, errNotObject
	}
	i = skipSpace(frame, i+1)
	if i < len(frame) && frame[i] == '}' {
		i++
	} else {
		for {
			mb, off, ok := scanMember(frame, i)
			if !ok {
				return msg, syntaxError(frame, off)
			}
			idx := -1
			switch string(mb.key) {
			case "jsonrpc":
				idx = memberVersion
			case "id":
				idx = memberID
			case "method":
				idx = memberMethod
			case "params":
				idx = memberParams
			case "result":
				idx = memberResult
			case "error":
				idx = memberError
			}
			if idx >= 0 {
				if members[idx] != nil {
					return msg, errDuplicate
				}
				members[idx] = mb.value
			}
			i = mb.next
			if i < len(frame) && frame[i] == ',' {
				i = skipSpace(frame, i+1)
				continue
			}
			if i < len(frame) && frame[i] == '}' {
				i++
				break
			}
			return msg, syntaxError(frame, i)
		}
	}
	if skipSpace(frame, i) != len(frame) {
		return msg, errTrailing
	}
	return shape(members)
}

// shape applies the JSON-RPC rules to the top-level members of a frame.
func shape(members [memberCount][]byte) (Message, error) {
	var msg Message
	version, id, method := members[memberVersion], members[memberID], members[memberMethod]
	params, result, errObj := members[memberParams], members[memberResult], members[memberError]
	if version == nil {
		return msg, errNoVersion
	}
	if string(version) != `"2.0"` && (version[0] != '"' || decodeString(version) != "2.0") {
		return msg, errBadVersion
	}
	if isNull(errObj) {
		errObj = nil
	}
	if isNull(params) {
		params = nil
	}
	idNull := false
	if id != nil {
		switch id[0] {
		case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		case 'n':
			idNull = true
		default:
			return msg, errIDType
		}
	}
	if method != nil {
		if method[0] != '"' {
			return msg, errMethodType
		}
		if result != nil || errObj != nil {
			return msg, errRequestAnswer
		}
		msg.Method, msg.Params = methodName(method), params
		if id == nil {
			msg.Kind = KindNotification
			return msg, nil
		}
		if idNull {
			return msg, errNullRequestID
		}
		msg.Kind, msg.ID = KindRequest, id
		return msg, nil
	}
	switch {
	case result != nil && errObj != nil:
		return msg, errResultAndError
	case result != nil:
		if id == nil || idNull {
			return msg, errResultNoID
		}
		msg.Kind, msg.ID, msg.Result = KindResponse, id, result
		return msg, nil
	case errObj != nil:
		e, err := decodeError(errObj)
		if err != nil {
			return msg, err
		}
		msg.Kind, msg.ID, msg.Error = KindResponse, id, e
		return msg, nil
	case id == nil:
		return msg, errNoID
	default:
		return msg, errNoOutcome
	}
}

func isNull(v []byte) bool { return string(v) == "null" }

// decodeError decodes an error object. It is off the hot path: a tool's own
// failure is a result, and JSON-RPC errors are rare.
func decodeError(raw []byte) (*Error, error) {
	if raw[0] != '{' {
		return nil, errErrorType
	}
	e := new(Error)
	if err := json.Unmarshal(raw, e); err != nil {
		return nil, invalid("malformed \"error\": " + err.Error())
	}
	return e, nil
}

// IntID returns the id as an int64 when it is a JSON integer that fits, as
// the ids of the requests we send are. A string id such as "7" is not one.
func (m *Message) IntID() (int64, bool) {
	return parseIntID(m.ID)
}

func parseIntID(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return int64(-u), true
	case !neg && u < 1<<63:
		return int64(u), true
	}
	return 0, false
}

// isBlank reports whether b holds nothing but JSON whitespace.
func isBlank(b []byte) bool {
	return skipSpace(b, 0) == len(b)
}
