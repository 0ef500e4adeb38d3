package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"

	"github.com/mcpvisor/mcpvisor"
)

// terminalInputs asks a config file's inputs (${input:ID}) on the
// terminal the CLI runs in, as VS Code asks them in its window: the
// question on w, the answer read from in, a password without echo. The
// host keeps each answer for later runs. nil when stdin is no terminal:
// the host then says which environment variable gives the value.
func terminalInputs(stdin *os.File, w io.Writer) func(context.Context, mcpvisor.InputRequest) (string, error) {
	fd := int(stdin.Fd())
	if !term.IsTerminal(fd) {
		return nil
	}
	lines := bufio.NewReader(stdin)
	return promptInput(lines, w, func() (string, error) {
		b, err := term.ReadPassword(fd)
		fmt.Fprintln(w)
		return string(b), err
	})
}

// promptInput asks one input a line at a time: the question on w, the
// answer a line of in (password, when the input is one), the default for
// an empty line, one of the options when it has them.
func promptInput(in *bufio.Reader, w io.Writer, password func() (string, error)) func(context.Context, mcpvisor.InputRequest) (string, error) {
	return func(ctx context.Context, q mcpvisor.InputRequest) (string, error) {
		what := q.ID
		if q.Description != "" {
			what = q.Description + " (" + q.ID + ")"
		}
		fmt.Fprintf(w, "mcpvisor: server %q needs %s; it is kept for later runs (or set %s)\n", q.Server, printable(what), mcpvisor.InputEnvName(q.ID))
		for range 3 {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			prompt := "  " + q.ID
			switch {
			case len(q.Options) > 0:
				prompt += " [" + strings.Join(q.Options, "|") + "]"
			case q.Default != "" && !q.Password:
				prompt += " [" + q.Default + "]"
			}
			fmt.Fprint(w, prompt+": ")
			var v string
			var err error
			if q.Password {
				v, err = password()
			} else {
				v, err = in.ReadString('\n')
				if errors.Is(err, io.EOF) && v != "" {
					err = nil
				}
			}
			if err != nil {
				return "", fmt.Errorf("reading the answer: %w", err)
			}
			v = strings.TrimRight(v, "\r\n")
			if v == "" {
				v = q.Default
			}
			switch {
			case v == "":
				fmt.Fprintln(w, "  an answer is needed")
			case len(q.Options) > 0 && !slices.Contains(q.Options, v):
				fmt.Fprintf(w, "  want one of %s\n", strings.Join(q.Options, ", "))
			default:
				return v, nil
			}
		}
		return "", errors.New("no valid answer")
	}
}
