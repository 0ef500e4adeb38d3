package persistence

// prefixContainment keys ContainmentRecords by id:
//
//	p/<id>   ContainmentRecord
//
// They are never pruned: each is deleted by the host once its processes
// are gone, or by the next host once it has stopped what they left.
const prefixContainment = "p/"

// Containments returns every containment record, in id order: the
// incarnations of stdio servers not known to be stopped.
func (s *Store) Containments() ([]ContainmentRecord, error) {
	return all[ContainmentRecord](s, prefixContainment)
}
