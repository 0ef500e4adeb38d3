package sidecar

import (
	"net/http"
	"os"
	"path/filepath"

	"github.com/mcpvisor/mcpvisor"
)

// media serves DataDir/media/<file> for names of the generated form only,
// so no request reaches outside the directory or a temporary file.
func (s *Server) media(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	ctype, ok := mcpvisor.MediaContentType(name)
	if !ok {
		notFound(w, "no such media file")
		return
	}
	f, err := os.Open(filepath.Join(s.opts.DataDir, "media", name))
	if err != nil {
		notFound(w, "no such media file")
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		notFound(w, "no such media file")
		return
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox")
	h.Set("Cache-Control", "private, max-age=31536000, immutable")
	http.ServeContent(w, r, "", st.ModTime(), f)
}
