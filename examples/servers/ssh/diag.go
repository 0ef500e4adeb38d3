package main

import (
	"fmt"
	"strconv"
	"strings"
)

// sysinfoScript prints each fact after a "@@name" marker line, so one
// round trip gathers them all.
const sysinfoScript = `echo @@hostname; hostname 2>/dev/null || cat /proc/sys/kernel/hostname
echo @@os; cat /etc/os-release 2>/dev/null
echo @@kernel; uname -r
echo @@uptime; cat /proc/uptime 2>/dev/null
echo @@load; cat /proc/loadavg 2>/dev/null
echo @@meminfo; cat /proc/meminfo 2>/dev/null
echo @@df; df -P / 2>/dev/null
true`

// sections splits marked output into its sections.
func sections(out string) map[string]string {
	m := map[string]string{}
	name := ""
	var b strings.Builder
	flush := func() {
		if name != "" {
			m[name] = strings.TrimSpace(b.String())
		}
		b.Reset()
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "@@") {
			flush()
			name = strings.TrimPrefix(line, "@@")
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	flush()
	return m
}

// formatSysinfo renders the output of sysinfoScript as "key: value" lines.
func formatSysinfo(out string) string {
	s := sections(out)
	var b strings.Builder
	field := func(k, v string) {
		if v == "" {
			v = "unknown"
		}
		fmt.Fprintf(&b, "%s: %s\n", k, v)
	}
	field("hostname", s["hostname"])
	field("os", osName(s["os"]))
	field("kernel", s["kernel"])
	field("uptime", uptime(s["uptime"]))
	if f := strings.Fields(s["load"]); len(f) >= 3 {
		field("load", strings.Join(f[:3], " ")+" (1, 5, 15 min)")
	} else {
		field("load", "")
	}
	field("memory", memory(s["meminfo"]))
	field("disk /", disk(s["df"]))
	return strings.TrimSuffix(b.String(), "\n")
}

// osName is PRETTY_NAME from os-release, else NAME VERSION.
func osName(release string) string {
	kv := map[string]string{}
	for _, line := range strings.Split(release, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		} else {
			v = strings.Trim(v, `'"`)
		}
		kv[k] = v
	}
	if kv["PRETTY_NAME"] != "" {
		return kv["PRETTY_NAME"]
	}
	return strings.TrimSpace(kv["NAME"] + " " + kv["VERSION"])
}

func uptime(procUptime string) string {
	f := strings.Fields(procUptime)
	if len(f) == 0 {
		return ""
	}
	secs, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return ""
	}
	total := int64(secs)
	d, h, m := total/86400, total%86400/3600, total%3600/60
	if d > 0 {
		return fmt.Sprintf("%dd %dh %dm", d, h, m)
	}
	return fmt.Sprintf("%dh %dm", h, m)
}

func memory(meminfo string) string {
	kb := map[string]int64{}
	for _, line := range strings.Split(meminfo, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		if f := strings.Fields(v); len(f) > 0 {
			if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
				kb[k] = n
			}
		}
	}
	total, ok := kb["MemTotal"]
	if !ok || total == 0 {
		return ""
	}
	avail, ok := kb["MemAvailable"]
	if !ok {
		avail = kb["MemFree"] + kb["Buffers"] + kb["Cached"]
	}
	s := fmt.Sprintf("%s used of %s (%s available)", humanKiB(total-avail), humanKiB(total), humanKiB(avail))
	if st := kb["SwapTotal"]; st > 0 {
		s += fmt.Sprintf(", swap %s used of %s", humanKiB(st-kb["SwapFree"]), humanKiB(st))
	}
	return s
}

// disk reads `df -P /`: filesystem, 1024-blocks, used, available, capacity.
func disk(df string) string {
	lines := strings.Split(df, "\n")
	if len(lines) < 2 {
		return ""
	}
	f := strings.Fields(lines[len(lines)-1])
	if len(f) < 6 {
		return ""
	}
	size, err1 := strconv.ParseInt(f[1], 10, 64)
	used, err2 := strconv.ParseInt(f[2], 10, 64)
	avail, err3 := strconv.ParseInt(f[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return ""
	}
	return fmt.Sprintf("%s used of %s (%s), %s available, on %s", humanKiB(used), humanKiB(size), f[4], humanKiB(avail), f[0])
}

func humanKiB(kib int64) string {
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB"}
	v := float64(kib)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", v, units[i])
}

// systemdActions are the systemd tool's actions.
var systemdActions = []string{"status", "start", "stop", "restart", "enable", "disable", "list", "logs"}

// noSystemdMarker is printed by systemdCommand when the tool it needs is
// missing, so the error can say so.
const noSystemdMarker = "mcpvisor-ssh: systemd not available"

// systemdCommand builds the shell command for a systemd action, its
// arguments quoted.
func systemdCommand(action, unit string, lines int) (string, error) {
	need := func(tool string) string {
		return "command -v " + tool + " >/dev/null 2>&1 || { echo '" + noSystemdMarker + ": no " + tool + "' >&2; exit 127; }; "
	}
	if action != "list" && unit == "" {
		return "", fmt.Errorf("unit is required for action %q", action)
	}
	q := shellQuote(unit)
	switch action {
	case "status":
		return need("systemctl") + "systemctl status --no-pager --full -- " + q, nil
	case "start", "stop", "restart", "enable", "disable":
		return need("systemctl") + "systemctl " + action + " -- " + q, nil
	case "list":
		cmd := need("systemctl") + "systemctl list-units --no-pager --all --type=service"
		if unit != "" {
			cmd += " -- " + q
		}
		return cmd, nil
	case "logs":
		if lines <= 0 {
			lines = 50
		}
		return need("journalctl") + "journalctl --no-pager -n " + strconv.Itoa(lines) + " -u " + q, nil
	}
	return "", fmt.Errorf("unknown action %q: want one of %s", action, strings.Join(systemdActions, ", "))
}

// systemdAbsent reports, from a command's stderr, that systemd is missing
// or not running, with the reason.
func systemdAbsent(stderr string) (string, bool) {
	if i := strings.Index(stderr, noSystemdMarker); i >= 0 {
		line, _, _ := strings.Cut(stderr[i+len(noSystemdMarker):], "\n")
		return strings.TrimPrefix(line, ": "), true
	}
	for _, s := range []string{"System has not been booted with systemd", "Failed to connect to bus", "Failed to connect to system scope bus"} {
		if strings.Contains(stderr, s) {
			return "systemd is not running (" + s + ")", true
		}
	}
	return "", false
}
