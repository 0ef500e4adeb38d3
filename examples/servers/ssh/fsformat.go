package main

// The output format of the filesystem tools. read_file, list_files,
// grep_files, edit_file and replace_lines answer exactly as a local
// filesystem tool would, so a model treats local and remote files alike; the
// only difference is the leading alias argument. The format, defined here
// once and documented in README.md:
//
//   - read_file: `cat -n` style, one line per file line, "%6d\t%s" (the
//     1-based line number right-aligned in six columns, a tab, the line
//     without its newline). offset (1-based) and limit select a window; an
//     empty file reads "(empty file)". Nothing else is added.
//   - list_files: one entry per line, relative to the listed path, sorted
//     bytewise, directories with a trailing "/". Recursive listings give
//     nested paths ("a/b.txt"). An empty directory reads "(empty directory)";
//     when max_entries cut the list, a last line says
//     "[truncated: first N entries shown]".
//   - grep_files: one match per line, "path:line:text", where path is the
//     file's path as reached from the path argument, line is 1-based and
//     text is the matching line. Files are visited in sorted order. No match
//     reads "No matches."; when max_matches cut the list, a last line says
//     "[truncated: first N matches shown]".
//   - edit_file: one line, "Edited PATH: N replacement(s)", or
//     "Created PATH (N bytes)" when an empty old_string made a new file.
//   - replace_lines: one line, "Replaced lines S-E of PATH with N line(s)",
//     or "Inserted N line(s) before line S of PATH" for an empty range.
//
// The functions here know nothing of SSH; the tools feed them what SFTP read.

import (
	"fmt"
	"sort"
	"strings"
)

const (
	emptyFile      = "(empty file)"
	emptyDirectory = "(empty directory)"
	noMatches      = "No matches."
)

// splitLines splits file content into lines without their "\n"; a final
// newline does not start an extra empty line.
func splitLines(content string) []string {
	if content == "" {
		return nil
	}
	lines := strings.Split(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// formatRead renders content as read_file does: lines offset..offset+limit-1
// (offset 1-based; 0 means 1; limit 0 means to the end), "%6d\t%s" each.
func formatRead(content string, offset, limit int) (string, error) {
	lines := splitLines(content)
	if len(lines) == 0 {
		if offset > 1 {
			return "", fmt.Errorf("offset %d is past the end of the file (0 lines)", offset)
		}
		return emptyFile, nil
	}
	if offset <= 0 {
		offset = 1
	}
	if offset > len(lines) {
		return "", fmt.Errorf("offset %d is past the end of the file (%d lines)", offset, len(lines))
	}
	end := len(lines)
	if limit > 0 && offset-1+limit < end {
		end = offset - 1 + limit
	}
	var b strings.Builder
	for i := offset - 1; i < end; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i+1, lines[i])
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// listEntry is one list_files entry: a path relative to the listed path,
// "/"-separated.
type listEntry struct {
	Path  string
	IsDir bool
}

// formatList renders list_files output: entries sorted, the first max of
// them (max <= 0: all) and a truncation note if there were more.
func formatList(entries []listEntry, max int) string {
	if len(entries) == 0 {
		return emptyDirectory
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Path
		if e.IsDir {
			names[i] += "/"
		}
	}
	sort.Strings(names)
	if max <= 0 || len(names) <= max {
		return strings.Join(names, "\n")
	}
	return strings.Join(names[:max], "\n") + fmt.Sprintf("\n[truncated: first %d entries shown]", max)
}

// grepMatch is one grep_files match.
type grepMatch struct {
	Path string
	Line int // 1-based
	Text string
}

// formatGrep renders grep_files output; matches are in the order found.
func formatGrep(matches []grepMatch, truncated bool, max int) string {
	if len(matches) == 0 {
		return noMatches
	}
	var b strings.Builder
	for i, m := range matches {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s:%d:%s", m.Path, m.Line, m.Text)
	}
	if truncated {
		fmt.Fprintf(&b, "\n[truncated: first %d matches shown]", max)
	}
	return b.String()
}

// grepContent returns the lines of content that re matches, as matches of
// file path, at most limit of them (limit <= 0: no limit).
func grepContent(path, content string, re interface{ MatchString(string) bool }, limit int) []grepMatch {
	var out []grepMatch
	for i, line := range splitLines(content) {
		if re.MatchString(line) {
			out = append(out, grepMatch{Path: path, Line: i + 1, Text: strings.TrimSuffix(line, "\r")})
			if limit > 0 && len(out) >= limit {
				break
			}
		}
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// formatEdited is edit_file's summary.
func formatEdited(path string, replacements int, created bool, size int) string {
	if created {
		return fmt.Sprintf("Created %s (%s)", path, plural(size, "byte", "bytes"))
	}
	return fmt.Sprintf("Edited %s: %s", path, plural(replacements, "replacement", "replacements"))
}

// formatReplaced is replace_lines's summary.
func formatReplaced(path string, start, end, newLines int) string {
	if end < start {
		return fmt.Sprintf("Inserted %s before line %d of %s", plural(newLines, "line", "lines"), start, path)
	}
	return fmt.Sprintf("Replaced lines %d-%d of %s with %s", start, end, path, plural(newLines, "line", "lines"))
}
