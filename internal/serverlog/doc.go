// Package serverlog writes one diagnostic log file per MCP server:
// <dir>/<sanitized server name>.log, rotated to <name>.log.1 (one backup)
// when it would grow past a size limit.
//
//	logs, err := serverlog.OpenDir(serverlog.Options{Dir: "logs/mcp"})
//	if err != nil {
//		return err
//	}
//	defer logs.Close()
//	f := logs.Open("fs")
//	defer f.Close()
//	f.Write("lifecycle", "started, pid 4242")
//	f.Write("stderr", "INFO: server ready")
//	f.Write("warning", "rate limit approaching") // a notifications/message record
//
// The files of a Dir share one writer goroutine, which runs only while
// lines wait, and a file is open only while its lines are appended: a host
// of 10,000 quiet servers holds no descriptor and no goroutine for their
// logs. Open is the same for a single file, with a Dir of its own.
//
// Each record is one line: an ISO-8601 UTC timestamp with milliseconds, a
// space, the tag in brackets padded with spaces to the width of
// "[lifecycle]", a space and the text, with any newline in the text escaped
// as the two characters \n:
//
//	2026-07-03T12:34:56.789Z [stderr]    INFO: server ready
//	2026-07-03T12:34:56.789Z [warning]   scraper: rate limit approaching
//	2026-07-03T12:34:56.789Z [lifecycle] failed to start: command not found
//
// Callers use the tags "stderr" (a line the child wrote to stderr),
// "lifecycle" (start, stop, crash, restart) and the MCP log levels "debug"
// through "emergency" (notifications/message records).
//
// Write never blocks on the disk: lines go through a bounded queue per file
// that the Dir's writer drains. A line that finds the queue full is dropped
// and counted, and the next line that gets in is preceded by a
// "[lifecycle] N log lines dropped" record, so a flooding server costs a
// bounded amount of memory and the file says what was lost.
package serverlog
