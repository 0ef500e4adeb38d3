package cluster

import "errors"

var (
	// ErrNoTLS is a member started without TLS and without
	// Config.InsecureLoopback.
	ErrNoTLS = errors.New("cluster: mutual TLS is required between members (a certificate, its key and the cluster's CA)")
	// ErrNotLoopback is Config.InsecureLoopback with a listen or advertise
	// address off loopback.
	ErrNotLoopback = errors.New("cluster: without TLS a member listens and is reached on loopback only")
	// ErrMemberName is a member name that is not the one its certificate
	// gives: this member's at start, a peer's on a connection.
	ErrMemberName = errors.New("cluster: the member name is not its certificate's")
)
