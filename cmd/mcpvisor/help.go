package main

import (
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"text/tabwriter"
)

// overview is the usage of mcpvisor: every command of the table, one line
// each.
func overview(cmds []command) string {
	var b strings.Builder
	b.WriteString("usage: mcpvisor COMMAND [flags] [arguments]\n\ncommands:\n")
	writeCommands(&b, cmds)
	b.WriteString("\nRun 'mcpvisor help COMMAND' for a command's flags; 'mcpvisor --version' prints the version.\n")
	return b.String()
}

// commandHelp is the usage of c: its synopsis, what it does, its flags
// with their defaults and its subcommands.
func commandHelp(cmds []command, c *command) string {
	var b strings.Builder
	fs := c.flagSet(&flags{})
	synopsis := "mcpvisor " + c.name
	if hasFlags(fs) {
		synopsis += " [flags]"
	}
	if c.args != "" {
		synopsis += " " + c.args
	}
	fmt.Fprintf(&b, "usage: %s\n\n%s\n", synopsis, c.summary)
	if c.detail != "" {
		fmt.Fprintf(&b, "\n%s\n", c.detail)
	}
	if hasFlags(fs) {
		b.WriteString("\nflags:\n")
		tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
		fs.VisitAll(func(fl *flag.Flag) {
			name, usage := flag.UnquoteUsage(fl)
			if name != "" {
				name = " " + name
			}
			if def := fl.DefValue; def != "" && def != "false" && def != "0" {
				usage += fmt.Sprintf(" (default %s)", def)
			}
			fmt.Fprintf(tw, "  %s%s\t%s\n", dashed(fl.Name), name, usage)
		})
		tw.Flush()
	}
	var subs []command
	for _, s := range cmds {
		if strings.HasPrefix(s.name, c.name+" ") {
			subs = append(subs, s)
		}
	}
	if len(subs) > 0 {
		b.WriteString("\nsubcommands:\n")
		writeCommands(&b, subs)
	}
	return b.String()
}

// writeCommands lists cmds, one synopsis and summary a line; a long
// synopsis has its summary on the next line.
func writeCommands(b *strings.Builder, cmds []command) {
	const column = 30
	for _, c := range cmds {
		synopsis := strings.TrimSpace(c.name + " " + c.args)
		if len(synopsis) > column-4 {
			fmt.Fprintf(b, "  %s\n%*s%s\n", synopsis, column, "", c.summary)
			continue
		}
		fmt.Fprintf(b, "  %-*s%s\n", column-2, synopsis, c.summary)
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// cmdHelp prints the overview, or the help of the command args name.
func cmdHelp(cmds []command, args []string, stdout io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stdout, overview(cmds))
		return nil
	}
	name := strings.Join(args, " ")
	for i := range cmds {
		if cmds[i].name == name {
			fmt.Fprint(stdout, commandHelp(cmds, &cmds[i]))
			return nil
		}
	}
	return &exitError{code: 2, msg: fmt.Sprintf("help: unknown command %q\n\n%s", name, overview(cmds))}
}

// cmdVersion prints the version of this binary.
func cmdVersion(stdout io.Writer) error {
	bi, _ := debug.ReadBuildInfo() // nil when none is recorded
	fmt.Fprint(stdout, versionText(bi))
	return nil
}

// versionText describes the build bi (nil: none recorded): the main
// module's version and, when the build recorded them, the commit, its
// time, whether the tree had uncommitted changes and the Go release.
func versionText(bi *debug.BuildInfo) string {
	if bi == nil {
		return "mcpvisor: this binary records no build information\n"
	}
	var b strings.Builder
	switch v := bi.Main.Version; v {
	case "", "(devel)":
		b.WriteString("mcpvisor (devel): a development build, not a released version\n")
	default:
		fmt.Fprintf(&b, "mcpvisor %s\n", v)
	}
	tw := tabwriter.NewWriter(&b, 0, 4, 1, ' ', 0)
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			fmt.Fprintf(tw, "  revision:\t%s\n", s.Value)
		case "vcs.time":
			fmt.Fprintf(tw, "  committed:\t%s\n", s.Value)
		case "vcs.modified":
			fmt.Fprintf(tw, "  modified:\t%s\n", s.Value)
		}
	}
	if bi.GoVersion != "" {
		fmt.Fprintf(tw, "  go:\t%s\n", bi.GoVersion)
	}
	tw.Flush()
	return b.String()
}
