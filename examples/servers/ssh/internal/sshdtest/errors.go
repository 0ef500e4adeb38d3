package sshdtest

import "errors"

// errPortTaken: another process bound sshd's port between the free-port
// probe and sshd's bind; Start tries another port.
var errPortTaken = errors.New("port taken by another process")
