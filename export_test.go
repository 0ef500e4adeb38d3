package mcpvisor

// ClusterPublishedBytes is how much the host has published by gossip as a
// member of its cluster (0: none).
func (h *Host) ClusterPublishedBytes() int64 {
	if h.cluster == nil {
		return 0
	}
	return h.cluster.n().PublishedBytes()
}
