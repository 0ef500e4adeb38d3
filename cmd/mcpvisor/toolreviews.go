package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// tools review, tools approve and tools reject: the tool definitions that
// wait for a person under a tool policy (MCPVISOR_TOOL_POLICY, or a
// server's "toolPolicy"), and the person's decisions, through the running
// sidecar or on a host of the command's own.

// reviewDesk is where the CLI reads tool reviews and decides them: the
// running sidecar, or a host of its own. The commands' logic sees only
// this, so a test can hand it a desk of its own.
type reviewDesk struct {
	// servers are the states of the servers the reviews are of, each
	// waited for until it was ready or its start had failed.
	servers []mcpvisor.ServerStatus
	reviews []mcpvisor.ToolReview
	// decide approves (approve) or rejects the reviewed definition.
	decide func(ctx context.Context, rv mcpvisor.ToolReview, approve bool, by string) error
	close  func()
}

// openReviewDesk reads the reviews of server, or of every server when it
// is "": through the sidecar when one answers, else on a host of the
// command's own that starts only that server. Either way each server is
// first waited for, at most --wait, until it is ready or its start has
// failed. The caller closes the desk.
func openReviewDesk(ctx context.Context, e *env, server string) (*reviewDesk, error) {
	if r := e.sidecar; r != nil {
		sts, err := r.servers(ctx, e.f.wait)
		if err != nil {
			return nil, err
		}
		reviews, err := r.toolReviews(ctx)
		if err != nil {
			return nil, err
		}
		d := &reviewDesk{servers: sts, reviews: reviews, decide: r.decideTool, close: func() {}}
		if server != "" && !d.only(server) {
			return nil, fmt.Errorf("no server %q on the sidecar running on %s (pid %d)", server, e.f.data, r.info.PID)
		}
		return d, nil
	}
	opts := hostOptions(e.f, e.cfg, e.logger)
	if server != "" {
		opts.Only = []string{server}
	}
	h, err := mcpvisor.Open(ctx, opts)
	if err != nil {
		return nil, lockHint(err)
	}
	// Without a tool policy nothing is pinned, and nothing will await
	// review however long the servers take to start: no wait for them.
	if policyInForce(e.cfg) || (&reviewDesk{servers: h.Status()}).policyNote() == "" {
		waitAll(ctx, h, e.f.wait)
	}
	d := &reviewDesk{servers: h.Status(), reviews: h.ToolReviews(), close: func() { _ = h.Close() },
		decide: func(ctx context.Context, rv mcpvisor.ToolReview, approve bool, by string) error {
			if approve {
				return h.ApproveTool(ctx, rv.Server, rv.Tool, rv.Hash, by)
			}
			return h.RejectTool(ctx, rv.Server, rv.Tool, rv.Hash, by)
		}}
	if server != "" && !d.only(server) {
		d.close()
		return nil, fmt.Errorf("no server %q in %s or the registry in %s", server, e.f.config, e.f.data)
	}
	return d, nil
}

// only keeps the servers and reviews of server, and reports whether there
// is such a server.
func (d *reviewDesk) only(server string) bool {
	d.servers = slices.DeleteFunc(d.servers, func(st mcpvisor.ServerStatus) bool { return st.Name != server })
	d.reviews = slices.DeleteFunc(d.reviews, func(rv mcpvisor.ToolReview) bool { return rv.Server != server })
	return len(d.servers) > 0
}

// policyNote says, when no server has a tool policy, that nothing is
// pinned, and so nothing ever awaits review; "" otherwise.
func (d *reviewDesk) policyNote() string {
	for _, st := range d.servers {
		if st.ToolPolicy != "" && st.ToolPolicy != mcpvisor.ToolPolicyOff {
			return ""
		}
	}
	return fmt.Sprintf("no tool policy is in force, so no tool definition is pinned: set %s=hold (or warn), or a server's \"toolPolicy\" in the config",
		mcpvisor.ToolPolicyEnv)
}

// policyInForce reports whether a tool policy other than off applies to
// some server of cfg: the environment's (MCPVISOR_TOOL_POLICY) or one of
// its entries'. A server's status says its policy only once it runs.
func policyInForce(cfg *mcpvisor.Config) bool {
	if p := os.Getenv(mcpvisor.ToolPolicyEnv); p != "" && p != mcpvisor.ToolPolicyOff {
		return true
	}
	if cfg != nil {
		for _, sc := range cfg.Servers {
			if sc.ToolPolicy != "" && sc.ToolPolicy != mcpvisor.ToolPolicyOff {
				return true
			}
		}
	}
	return false
}

// toolReviews is GET /v1/tools/reviews.
func (r *remote) toolReviews(ctx context.Context) ([]mcpvisor.ToolReview, error) {
	var out struct {
		Reviews []mcpvisor.ToolReview `json:"reviews"`
	}
	err := r.do(ctx, http.MethodGet, "/v1/tools/reviews", nil, &out)
	return out.Reviews, err
}

// decideTool is POST /v1/tools/reviews/decide.
func (r *remote) decideTool(ctx context.Context, rv mcpvisor.ToolReview, approve bool, by string) error {
	decision := "reject"
	if approve {
		decision = "approve"
	}
	body := map[string]string{"server": rv.Server, "tool": rv.Tool, "hash": rv.Hash, "decision": decision, "by": by}
	return r.do(ctx, http.MethodPost, "/v1/tools/reviews/decide", body, nil)
}

// cmdToolReviews lists the definitions awaiting review: tools review
// [--server NAME] [--json].
func cmdToolReviews(ctx context.Context, e *env) error {
	if len(e.args) > 0 {
		return &exitError{code: exitUsage, msg: "tools review: takes no arguments; --server NAME picks a server" + seeHelp("tools review")}
	}
	d, err := openReviewDesk(ctx, e, e.f.server)
	if err != nil {
		return err
	}
	defer d.close()
	if e.f.json {
		if err := printJSON(e.stdout, nonNilReviews(d.reviews)); err != nil {
			return err
		}
	} else {
		for i, rv := range d.reviews {
			if i > 0 {
				fmt.Fprintln(e.stdout)
			}
			printReview(e.stdout, rv)
		}
		if len(d.reviews) == 0 {
			msg := "no tool definition awaits review"
			if note := d.policyNote(); note != "" {
				msg += "; " + note
			}
			fmt.Fprintf(e.stderr, "mcpvisor: %s\n", msg)
		}
	}
	if !policyInForce(e.cfg) && d.policyNote() != "" {
		return nil // nothing is pinned: the servers' readiness changes nothing
	}
	// A server that is not ready has listed nothing to review: say so,
	// lest the list read as complete.
	return notReadyError(notReady(d.servers), e.f, e.sidecar != nil)
}

func nonNilReviews(rvs []mcpvisor.ToolReview) []mcpvisor.ToolReview {
	if rvs == nil {
		return []mcpvisor.ToolReview{}
	}
	return rvs
}

// printReview writes one review as a block: what and where, the hash a
// decision names, the findings, then the diff from the approved
// definition or, for a tool never approved, the definition. Every text a
// server wrote is escaped (printable), so it cannot rewrite the screen.
func printReview(w io.Writer, rv mcpvisor.ToolReview) {
	mark := "exposed"
	switch {
	case rv.Rejected:
		mark = "rejected"
	case rv.Held:
		mark = "HELD"
	}
	fmt.Fprintf(w, "server %s  tool %s  %s  %s  since %s\n", printable(rv.Server), printable(rv.Tool), rv.State, mark,
		rv.Since.Local().Format(time.DateTime))
	fmt.Fprintf(w, "  name: %s\n  hash: %s\n", printable(rv.Name), printable(rv.Hash))
	if rv.Approved != "" {
		fmt.Fprintf(w, "  approved before: %s\n", printable(rv.Approved))
	}
	if len(rv.Findings) > 0 {
		fmt.Fprintln(w, "  findings:")
		for _, f := range rv.Findings {
			fmt.Fprintf(w, "    %s %s %s: %s: %s\n", printable(string(f.Severity)), printable(f.Rule), printable(f.Path),
				printable(f.Reason), printable(f.Excerpt))
		}
	}
	if rv.State == "changed" && rv.Diff != "" {
		fmt.Fprintln(w, "  diff:")
		printLines(w, "    ", rv.Diff)
		return
	}
	def := rv.Definition
	if def.Title != "" {
		fmt.Fprintf(w, "  title: %s\n", printable(def.Title))
	}
	fmt.Fprintln(w, "  description:")
	printLines(w, "    ", def.Description)
	if len(def.InputSchema) > 0 {
		fmt.Fprintf(w, "  input schema: %s\n", printable(string(def.InputSchema)))
	}
	if len(def.Icons) > 0 {
		fmt.Fprintf(w, "  icons: %s\n", printable(string(def.Icons)))
	}
	if len(def.Meta) > 0 {
		fmt.Fprintf(w, "  _meta: %s\n", printable(string(def.Meta)))
	}
}

// printLines writes text a line at a time, each escaped and indented.
func printLines(w io.Writer, indent, text string) {
	for line := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(w, "%s%s\n", indent, printable(line))
	}
}

// cmdToolDecide is tools approve SERVER [TOOL...] (approve) and tools
// reject SERVER TOOL....
func cmdToolDecide(approve bool) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		name, want := "tools reject", "SERVER TOOL..."
		if approve {
			name, want = "tools approve", "SERVER [TOOL...]"
		}
		if len(e.args) == 0 || !approve && len(e.args) < 2 {
			return &exitError{code: exitUsage, msg: name + ": want " + want + seeHelp(name)}
		}
		server := e.args[0]
		d, err := openReviewDesk(ctx, e, server)
		if err != nil {
			return err
		}
		defer d.close()
		// What a server that is not ready lists is not known: nothing to
		// decide on.
		if err := notReadyError(notReady(d.servers), e.f, e.sidecar != nil); err != nil {
			return err
		}
		return decideReviews(ctx, d, server, e.args[1:], approve, decidedBy(), e.stdout, e.stderr)
	}
}

// decideReviews approves or rejects, on behalf of by, the reviews of the
// tools of server (every one not rejected when tools is empty), each by
// the hash the desk listed, and says so on stdout a tool a line. A tool
// that has no review, or whose definition changed since it was listed,
// fails: the others are decided all the same, and the failures make the
// error (exit 1).
func decideReviews(ctx context.Context, d *reviewDesk, server string, tools []string, approve bool, by string, stdout, stderr io.Writer) error {
	verb, past := "reject", "rejected"
	if approve {
		verb, past = "approve", "approved"
	}
	var picked []mcpvisor.ToolReview
	var failed []string
	if len(tools) == 0 {
		for _, rv := range d.reviews {
			if rv.Server == server && !rv.Rejected {
				picked = append(picked, rv)
			}
		}
		if len(picked) == 0 {
			msg := fmt.Sprintf("server %s: no tool definition awaits review", server)
			if note := d.policyNote(); note != "" {
				msg += "; " + note
			}
			fmt.Fprintf(stderr, "mcpvisor: %s\n", msg)
			return nil
		}
	}
	seen := map[string]bool{}
	for _, tool := range tools {
		// TOOL@sha256:… names the definition the person reviewed: deciding
		// it fails as stale if the server lists another by now.
		tool, shown, pinned := strings.Cut(tool, "@sha256:")
		i := slices.IndexFunc(d.reviews, func(rv mcpvisor.ToolReview) bool {
			return rv.Server == server && (rv.Tool == tool || rv.Name == tool)
		})
		switch {
		case i < 0:
			failed = append(failed, fmt.Sprintf("%s/%s: no definition of it awaits review (approved already, or not listed)",
				server, printable(tool)))
		case !seen[d.reviews[i].Tool]:
			seen[d.reviews[i].Tool] = true
			rv := d.reviews[i]
			if pinned {
				rv.Hash = "sha256:" + shown
			}
			picked = append(picked, rv)
		}
	}
	for _, rv := range picked {
		where := server + "/" + printable(rv.Tool)
		err := d.decide(ctx, rv, approve, by)
		switch {
		case err == nil:
			fmt.Fprintf(stdout, "%s %s %s\n", past, where, printable(rv.Hash))
		case errors.Is(err, mcpvisor.ErrStaleReview) || apiCode(err) == sidecar.CodeStaleReview:
			failed = append(failed, fmt.Sprintf("%s: the definition changed since it was listed; review again (mcpvisor tools review --server %s)",
				where, server))
		default:
			failed = append(failed, fmt.Sprintf("%s: cannot %s: %v", where, verb, err))
		}
	}
	if len(failed) > 0 {
		return &exitError{code: exitFailure, msg: strings.Join(failed, "\n")}
	}
	return nil
}

// decidedBy is who the journal records as deciding from this command:
// "cli:" and the user's name ($USER, else the account's).
func decidedBy() string {
	name := os.Getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	if name == "" {
		name = "unknown"
	}
	return "cli:" + name
}
