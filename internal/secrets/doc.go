// Package secrets keeps the credentials of registered servers out of the
// journal: a Sealer replaces each literal value of an entry with a
// reference, ${MCPVISOR_SECRET_...}, and a Store keeps the values by server
// in <data>/secrets.json, mode 0600, every change written atomically
// (a temporary file, fsynced, renamed into place, the directory fsynced).
//
//	var s secrets.Sealer
//	entry.APIKey = s.APIKey(entry.APIKey) // "${MCPVISOR_SECRET_APIKEY}"
//	store, err := secrets.Open(dataDir)
//	...
//	err = store.Set(entry.Name, s.Sealed())
//	key, ok := store.Lookup(entry.Name, "MCPVISOR_SECRET_APIKEY")
//
// The file is {"servers": {"<server>": {"<reference name>": "<value>"}}}.
package secrets
