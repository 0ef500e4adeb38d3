package main

import "errors"

// Sentinel errors; tool results carry their wrapped messages. None of them,
// nor anything wrapping them, ever includes a secret.
var (
	errUnknownAlias      = errors.New("unknown alias")
	errBadAlias          = errors.New("invalid alias")
	errUnknownHost       = errors.New("unknown host key")
	errHostKeyChanged    = errors.New("host key changed")
	errSignInCancelled   = errors.New("sign-in cancelled")
	errNoElicitation     = errors.New("the client cannot be asked")
	errAuthFailed        = errors.New("authentication failed")
	errSudoNeedsPassword = errors.New("a password is required: this alias's sudo method is nopasswd, but the remote sudoers asks for one; use sudo: prompt")
	errSudoWrongPassword = errors.New("sudo rejected the password")
	errSudoDisabled      = errors.New("sudo is disabled for this alias (sudo: none)")
	errNoSystemd         = errors.New("systemd is not available")
	errTimeout           = errors.New("timed out")
)
