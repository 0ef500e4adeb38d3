// Package secrets keeps the credentials of registered servers out of the
// journal: a Sealer replaces each literal value of an entry with a
// reference, ${MCPVISOR_SECRET_...}, and a Store keeps the values by server,
// and the OAuth tokens and client registrations of servers, in
// <data>/secrets.json, mode 0600, every change written atomically
// (a temporary file, fsynced, renamed into place, the directory fsynced).
//
//	var s secrets.Sealer
//	entry.APIKey = s.APIKey(entry.APIKey) // "${MCPVISOR_SECRET_APIKEY}"
//	key, err := secrets.KeyFromEnv(os.LookupEnv, os.ReadFile) // nil: none
//	...
//	store, err := secrets.OpenWithKey(dataDir, key)
//	...
//	err = store.Set(entry.Name, s.Sealed())
//	apiKey, ok := store.Lookup(entry.Name, "MCPVISOR_SECRET_APIKEY")
//	err = store.SaveOAuth(entry.Name+"\x00"+user, tokenJSON)
//
// The file is
//
//	{"servers": {"<server>": {"<reference name>": "<value>"}},
//	 "oauth":   {"<server>[\u0000<user>]": <JSON document>}}
//
// # Protection at rest
//
// Opened with Open, or with no key, the file is plaintext: its only
// protection is the filesystem's (mode 0600, owned by the host's user), so
// anyone who can read it, or a backup of it, reads every secret.
//
// Given a 32-byte key (MCPVISOR_SECRET_KEY, or a file named by
// MCPVISOR_SECRET_KEY_FILE; generate one with `openssl rand -base64 32`),
// the whole document is sealed with AES-256-GCM under a fresh random nonce
// each write, and the file becomes
//
//	{"version":1,"alg":"A256GCM","nonce":"<base64>","ciphertext":"<base64>"}
//
// A plaintext file opened with a key is sealed at once. An encrypted file
// opened without its key (ErrEncrypted) or with another (ErrWrongKey) is an
// error and is left untouched; a lost key loses the file's contents. The
// key protects the file, not the running host: the secrets are in its
// memory, and the key in its environment.
package secrets
