package persistence

import "errors"

// Sentinel errors, wrapped with the directory, key or id they concern.
var (
	ErrLocked        = errors.New("journal is in use by another process")
	ErrClosed        = errors.New("journal closed")
	ErrCorrupt       = errors.New("journal record is corrupt")
	ErrSchemaVersion = errors.New("journal record has a newer schema version")
	ErrUnknownEvent  = errors.New("unknown event")
	ErrInvalidRecord = errors.New("journal record is invalid")
	ErrInvalidFilter = errors.New("journal filter is invalid")
	ErrDiskFull      = errors.New("journal is read-only: disk full")
	// ErrDamaged: the journal's files are damaged so that opening it would
	// lose what they hold; Open refused, after copying them aside. The
	// error is a *DamagedError.
	ErrDamaged = errors.New("journal is damaged")
)
