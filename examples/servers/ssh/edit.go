package main

import (
	"fmt"
	"strings"
)

// editString applies edit_file to content: it replaces old with new, once
// (old must occur exactly once) or everywhere with replaceAll. exists says
// the file exists; an empty old on a missing or empty file makes the file
// new (an empty existing file is filled, one replacement). It returns the
// new content, the number of replacements (0 for a creation) and whether
// the file is to be created.
func editString(content string, exists bool, old, new string, replaceAll bool) (out string, n int, created bool, err error) {
	if old == "" {
		if exists && content != "" {
			return "", 0, false, fmt.Errorf("old_string is empty but the file exists and is not empty; give the text to replace")
		}
		if exists {
			return new, 1, false, nil
		}
		return new, 0, true, nil
	}
	if !exists {
		return "", 0, false, fmt.Errorf("file does not exist (an empty old_string creates it)")
	}
	if old == new {
		return "", 0, false, fmt.Errorf("old_string and new_string are the same; nothing to change")
	}
	n = strings.Count(content, old)
	switch {
	case n == 0:
		return "", 0, false, fmt.Errorf("old_string not found in the file")
	case n > 1 && !replaceAll:
		return "", 0, false, fmt.Errorf("old_string occurs %d times in the file; add context to make it unique, or set replace_all", n)
	}
	if replaceAll {
		return strings.ReplaceAll(content, old, new), n, false, nil
	}
	return strings.Replace(content, old, new, 1), 1, false, nil
}

// replaceLinesString replaces lines start..end (1-based, inclusive) of
// content with replacement. end == start-1 inserts before line start (start
// may then be one past the last line, to append). A final newline of
// replacement is not an extra line; the file keeps its own final newline
// (or lack of one). It returns the new content and the number of lines
// inserted.
func replaceLinesString(content string, start, end int, replacement string) (string, int, error) {
	lines := splitLines(content)
	if start < 1 {
		return "", 0, fmt.Errorf("start_line must be 1 or more, got %d", start)
	}
	if end < start-1 {
		return "", 0, fmt.Errorf("end_line %d is before start_line %d", end, start)
	}
	if end > len(lines) || start > len(lines)+1 {
		return "", 0, fmt.Errorf("lines %d-%d are out of range: the file has %d lines", start, end, len(lines))
	}
	newLines := splitLines(replacement)
	out := make([]string, 0, len(lines)-(end-start+1)+len(newLines))
	out = append(out, lines[:start-1]...)
	out = append(out, newLines...)
	out = append(out, lines[end:]...)
	s := strings.Join(out, "\n")
	finalNewline := content == "" || strings.HasSuffix(content, "\n")
	if finalNewline && len(out) > 0 {
		s += "\n"
	}
	return s, len(newLines), nil
}
