package supervision

import "errors"

// Sentinel errors. Callers test them with errors.Is; this package wraps them
// with the command, pid or process group they concern.
var (
	// ErrCommandNotFound: StartProcess could not find the command, or it is
	// not an executable file. The error names the command.
	ErrCommandNotFound = errors.New("command not found")

	// ErrInvalidEnv: an entry of ProcessSpec.Env is not KEY=VALUE with a
	// non-empty key, or contains a NUL byte.
	ErrInvalidEnv = errors.New("invalid environment entry")

	// ErrWorkDir: ProcessSpec.Dir does not exist or is not a directory.
	// The error names the directory and what is wrong with it.
	ErrWorkDir = errors.New("bad working directory")

	// ErrInvalidLimits: a Limits field is negative or too small to run
	// anything (see Limits.Validate).
	ErrInvalidLimits = errors.New("invalid resource limits")

	// ErrInvalidPlacement: Reclaim was given a cgroup that is not one a
	// Containment makes; it killed nothing.
	ErrInvalidPlacement = errors.New("invalid placement")

	// ErrNotExited: Process.Exit was called before Process.Done was closed.
	ErrNotExited = errors.New("process has not exited")

	// ErrGroupSurvived: members of the child's process group were still
	// running after SIGKILL and a further TermGrace (for example stuck in
	// uninterruptible sleep). Stop returns it, wrapped with the group id.
	ErrGroupSurvived = errors.New("process group survived SIGKILL")
)
