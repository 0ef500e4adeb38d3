//go:build !linux

package supervision

import (
	"errors"
	"fmt"
)

// Subreaper is one holder of the process's child-subreaper attribute.
type Subreaper struct{}

// StartSubreaper fails outside Linux: there is no PR_SET_CHILD_SUBREAPER.
func StartSubreaper() (*Subreaper, error) {
	return nil, fmt.Errorf("child subreaper: %w", errors.ErrUnsupported)
}

// Close does nothing.
func (*Subreaper) Close() {}
