package secrets

import "errors"

// Sentinel errors. Callers test them with errors.Is; the store wraps them
// with the file's path.
var (
	// ErrEncrypted: the file is sealed and the store was opened without a
	// key. The file is left as it is.
	ErrEncrypted = errors.New("encrypted")
	// ErrWrongKey: the key does not open the sealed file, or the file was
	// altered. The file is left as it is.
	ErrWrongKey = errors.New("wrong key or corrupted file")
	// ErrInvalidKey: a key that is not 32 bytes, as base64 or 64 hex
	// characters.
	ErrInvalidKey = errors.New("key must be 32 bytes, as base64 or 64 hex characters")
)
