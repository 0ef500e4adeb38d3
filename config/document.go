package config

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/goccy/go-yaml"
)

// decodeDocument parses data in the dialect's syntax into the JSON value
// it stands for, with every object's members in document order, so that
// one decoder (the JSON helpers) reads all three syntaxes and their
// errors name fields alike. name, when not "", is the file's name for the
// positions of syntax errors.
func decodeDocument(name string, data []byte, d toolDialect) (json.RawMessage, *Error) {
	if err := checkBounds(data, d.syntax()); err != nil {
		if name != "" {
			err.msg = name + ": " + err.msg
		}
		return nil, err
	}
	switch d.syntax() {
	case syntaxTOML:
		return decodeTOML(name, data)
	case syntaxYAML:
		return decodeYAML(name, data)
	}
	return decodeJSON(name, data)
}

// where is a position in the file for messages: "mcp.json:3:7", or
// "line 3, column 7" without a name.
func where(name string, line, col int) string {
	if name != "" {
		return fmt.Sprintf("%s:%d:%d", name, line, col)
	}
	return fmt.Sprintf("line %d, column %d", line, col)
}

func decodeJSON(name string, data []byte) (json.RawMessage, *Error) {
	data = strip(data)
	var top json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		var syn *json.SyntaxError
		if !errors.As(err, &syn) {
			return nil, &Error{msg: err.Error(), cause: err}
		}
		line, col := syntaxPosition(data, syn.Offset)
		msg := where(name, line, col) + ": " + syn.Error()
		if first := bytes.TrimLeft(data, " \t\r\n"); len(first) > 0 && first[0] != '{' {
			// Most likely another tool's syntax under a JSON name.
			msg += ` (want JSON: Codex's TOML is read from a file named *.toml, Continue's YAML from *.yaml)`
		}
		return nil, &Error{msg: msg, cause: syn}
	}
	return top, nil
}

func decodeTOML(name string, data []byte) (json.RawMessage, *Error) {
	var doc map[string]any
	md, err := toml.Decode(string(data), &doc)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{msg: fmt.Sprintf("%s: not TOML, which %s is: %s", where(name, pe.Position.Line, pe.Position.Col), dialectCodex.file(), pe.Message), cause: err}
		}
		return nil, &Error{msg: fmt.Sprintf("not TOML, which %s is: %v", dialectCodex.file(), err), cause: err}
	}
	// MetaData.Keys lists every key in the order the document gives them:
	// a decoded map has none, and servers and fields keep file order.
	order := map[string]int{}
	for i, k := range md.Keys() {
		order[strings.Join(k, "\x00")] = i
	}
	var b bytes.Buffer
	writeTOMLValue(&b, doc, "", order)
	return b.Bytes(), nil
}

func decodeYAML(name string, data []byte) (json.RawMessage, *Error) {
	var doc any
	if err := yaml.UnmarshalWithOptions(data, &doc, yaml.UseOrderedMap()); err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil && ye.GetToken().Position != nil {
			pos := ye.GetToken().Position
			return nil, &Error{msg: fmt.Sprintf("%s: not YAML, which %s is: %s", where(name, pos.Line, pos.Column), dialectContinue.file(), ye.GetMessage()), cause: err}
		}
		first, _, _ := strings.Cut(err.Error(), "\n")
		return nil, &Error{msg: fmt.Sprintf("not YAML, which %s is: %s", dialectContinue.file(), first), cause: err}
	}
	var b bytes.Buffer
	writeYAMLValue(&b, doc)
	return b.Bytes(), nil
}

// writeTOMLValue writes v, decoded by toml.Decode at key path (keys
// joined by NUL), as JSON; a table's keys are written in document order.
func writeTOMLValue(b *bytes.Buffer, v any, path string, order map[string]int) {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sub := func(k string) string {
			if path == "" {
				return k
			}
			return path + "\x00" + k
		}
		at := func(k string) int {
			if i, ok := order[sub(k)]; ok {
				return i
			}
			return math.MaxInt // in an array of tables: by name, after the rest
		}
		slices.SortFunc(keys, func(x, y string) int {
			if c := cmp.Compare(at(x), at(y)); c != 0 {
				return c
			}
			return strings.Compare(x, y)
		})
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			writeTOMLValue(b, v[k], sub(k), order)
		}
		b.WriteByte('}')
	case []map[string]any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeTOMLValue(b, e, path, order)
		}
		b.WriteByte(']')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeTOMLValue(b, e, path, order)
		}
		b.WriteByte(']')
	default:
		writeScalar(b, v)
	}
}

// writeYAMLValue writes v, decoded with yaml.UseOrderedMap, as JSON.
func writeYAMLValue(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case yaml.MapSlice:
		b.WriteByte('{')
		for i, item := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			k, ok := item.Key.(string)
			if !ok {
				k = fmt.Sprint(item.Key)
			}
			writeString(b, k)
			b.WriteByte(':')
			writeYAMLValue(b, item.Value)
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeYAMLValue(b, e)
		}
		b.WriteByte(']')
	default:
		writeScalar(b, v)
	}
}

// writeScalar writes a decoded TOML or YAML scalar as JSON: numbers and
// booleans as such, anything else (dates, times, NaN) as a string.
func writeScalar(b *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		writeString(b, v)
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case uint64:
		b.WriteString(strconv.FormatUint(v, 10))
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			writeString(b, strconv.FormatFloat(v, 'g', -1, 64))
			return
		}
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	default:
		writeString(b, fmt.Sprint(v))
	}
}

func writeString(b *bytes.Buffer, s string) {
	out, _ := json.Marshal(s) // a string always marshals
	b.Write(out)
}
