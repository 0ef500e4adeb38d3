package main

import (
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestFormatRead(t *testing.T) {
	content := "alpha\nbeta\n\tgamma\ndelta"
	for _, tc := range []struct {
		name          string
		content       string
		offset, limit int
		want, err     string
	}{
		{"whole file", content, 0, 0, "     1\talpha\n     2\tbeta\n     3\t\tgamma\n     4\tdelta", ""},
		{"offset", content, 3, 0, "     3\t\tgamma\n     4\tdelta", ""},
		{"offset and limit", content, 2, 2, "     2\tbeta\n     3\t\tgamma", ""},
		{"limit past end", content, 4, 10, "     4\tdelta", ""},
		{"offset past end", content, 5, 0, "", "offset 5 is past the end of the file (4 lines)"},
		{"final newline is no line", "one\n", 0, 0, "     1\tone", ""},
		{"blank lines kept", "a\n\nb\n", 0, 0, "     1\ta\n     2\t\n     3\tb", ""},
		{"empty", "", 0, 0, emptyFile, ""},
		{"wide numbers", strings.Repeat("x\n", 1000000), 999999, 0, "999999\tx\n1000000\tx", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := formatRead(tc.content, tc.offset, tc.limit)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %q, %v\nwant %q", got, err, tc.want)
			}
		})
	}
}

func TestFormatList(t *testing.T) {
	entries := []listEntry{{Path: "b.txt"}, {Path: "a", IsDir: true}, {Path: "a/z.go"}, {Path: "C"}}
	if got, want := formatList(entries, 0), "C\na/\na/z.go\nb.txt"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got, want := formatList(entries, 2), "C\na/\n[truncated: first 2 entries shown]"; got != want {
		t.Errorf("truncated: got %q, want %q", got, want)
	}
	if got := formatList(nil, 10); got != emptyDirectory {
		t.Errorf("empty: %q", got)
	}
}

func TestFormatGrep(t *testing.T) {
	re := regexp.MustCompile(`^port\s*=`)
	content := "# conf\nport = 80\nhost = x\r\nport=81\r\n"
	m := grepContent("/etc/app.conf", content, re, 0)
	if got, want := formatGrep(m, false, 0), "/etc/app.conf:2:port = 80\n/etc/app.conf:4:port=81"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	m = grepContent("/etc/app.conf", content, re, 1)
	if got, want := formatGrep(m, true, 1), "/etc/app.conf:2:port = 80\n[truncated: first 1 matches shown]"; got != want {
		t.Errorf("limited: got %q, want %q", got, want)
	}
	if got := formatGrep(nil, false, 5); got != noMatches {
		t.Errorf("none: %q", got)
	}
}

func TestSummaries(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{formatEdited("/x", 1, false, 0), "Edited /x: 1 replacement"},
		{formatEdited("/x", 3, false, 0), "Edited /x: 3 replacements"},
		{formatEdited("/x", 0, true, 12), "Created /x (12 bytes)"},
		{formatReplaced("/x", 3, 5, 2), "Replaced lines 3-5 of /x with 2 lines"},
		{formatReplaced("/x", 4, 4, 1), "Replaced lines 4-4 of /x with 1 line"},
		{formatReplaced("/x", 4, 3, 2), "Inserted 2 lines before line 4 of /x"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

func TestEditString(t *testing.T) {
	for _, tc := range []struct {
		name     string
		content  string
		exists   bool
		old, new string
		all      bool
		want     string
		n        int
		created  bool
		err      string
	}{
		{"unique", "a = 1\nb = 2\n", true, "b = 2", "b = 3", false, "a = 1\nb = 3\n", 1, false, ""},
		{"ambiguous", "x x", true, "x", "y", false, "", 0, false, "occurs 2 times"},
		{"replace all", "x x", true, "x", "y", true, "y y", 2, false, ""},
		{"not found", "abc", true, "z", "y", false, "", 0, false, "not found"},
		{"same", "abc", true, "a", "a", false, "", 0, false, "the same"},
		{"create", "", false, "", "new\n", false, "new\n", 0, true, ""},
		{"fill empty file", "", true, "", "new\n", false, "new\n", 1, false, ""},
		{"empty old on content", "abc", true, "", "x", false, "", 0, false, "old_string is empty"},
		{"missing file", "", false, "a", "b", false, "", 0, false, "does not exist"},
		{"multiline", "one\ntwo\nthree\n", true, "two\nthree", "2\n3", false, "one\n2\n3\n", 1, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n, created, err := editString(tc.content, tc.exists, tc.old, tc.new, tc.all)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || n != tc.n || created != tc.created {
				t.Fatalf("got %q, %d, %v, %v; want %q, %d, %v", got, n, created, err, tc.want, tc.n, tc.created)
			}
		})
	}
}

func TestReplaceLinesString(t *testing.T) {
	const file = "1\n2\n3\n4\n5\n"
	for _, tc := range []struct {
		name        string
		content     string
		start, end  int
		replacement string
		want        string
		n           int
		err         string
	}{
		{"middle", file, 2, 4, "two\nthree", "1\ntwo\nthree\n5\n", 2, ""},
		{"trailing newline in content", file, 2, 4, "x\n", "1\nx\n5\n", 1, ""},
		{"delete", file, 2, 3, "", "1\n4\n5\n", 0, ""},
		{"first", file, 1, 1, "one", "one\n2\n3\n4\n5\n", 1, ""},
		{"last", file, 5, 5, "five\nsix", "1\n2\n3\n4\nfive\nsix\n", 2, ""},
		{"insert", file, 3, 2, "2.5", "1\n2\n2.5\n3\n4\n5\n", 1, ""},
		{"append", file, 6, 5, "6", "1\n2\n3\n4\n5\n6\n", 1, ""},
		{"no final newline kept", "a\nb", 2, 2, "B", "a\nB", 1, ""},
		{"blank line replacement", file, 1, 1, "\n", "\n2\n3\n4\n5\n", 1, ""},
		{"past end", file, 5, 6, "x", "", 0, "out of range"},
		{"zero start", file, 0, 1, "x", "", 0, "start_line"},
		{"reversed", file, 4, 2, "x", "", 0, "before start_line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, n, err := replaceLinesString(tc.content, tc.start, tc.end, tc.replacement)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want it to contain %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || n != tc.n {
				t.Fatalf("got %q, %d, %v; want %q, %d", got, n, err, tc.want, tc.n)
			}
		})
	}
}

func TestDestinationPath(t *testing.T) {
	for _, tc := range []struct {
		dst      string
		dstIsDir bool
		base     string
		join     func(...string) string
		want     string
	}{
		{"/srv/app/", false, "app.tar", path.Join, "/srv/app/app.tar"},                       // trailing slash: inside, even if missing
		{"/srv/app", true, "app.tar", path.Join, "/srv/app/app.tar"},                         // existing directory: inside
		{"/srv/app", false, "app.tar", path.Join, "/srv/app"},                                // anything else: exact
		{"/srv/new.tar", false, "app.tar", path.Join, "/srv/new.tar"},                        // renamed copy
		{"site", true, "public", path.Join, "site/public"},                                   // a tree into an existing dir
		{"site", false, "public", path.Join, "site"},                                         // a tree as a new dir
		{"/tmp/out/", false, "log.txt", filepath.Join, filepath.Join("/tmp/out", "log.txt")}, // download mirrors it
		{"/tmp/out", false, "log.txt", filepath.Join, "/tmp/out"},
	} {
		if got := destinationPath(tc.dst, tc.dstIsDir, tc.base, tc.join); got != tc.want {
			t.Errorf("destinationPath(%q, %v, %q) = %q, want %q", tc.dst, tc.dstIsDir, tc.base, got, tc.want)
		}
	}
}
