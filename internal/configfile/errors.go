package configfile

import "errors"

// ErrInvalid is wrapped by every error that reports an invalid
// configuration, including JSON syntax errors.
var ErrInvalid = errors.New("invalid config")
