//go:build !linux

package supervision

func maybeHelperHost() {}
