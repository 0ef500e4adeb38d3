package sidecar

import (
	"embed"
	"io/fs"
	"net/http"
)

// uiFiles is the inbox page: plain HTML, CSS and JavaScript, no build step.
//
//go:embed ui
var uiFiles embed.FS

// uiHeaders keep the page to its own scripts and origin: it renders
// server-provided text, so nothing inline may run, and it may be framed
// by no one.
var uiHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"X-Frame-Options":        "DENY",
	"Cache-Control":          "no-cache",
}

// ui serves the inbox page under /ui/. The files are static and hold no
// secret, so they are served without the token; every API call the page
// makes sends it (taken from the URL fragment or the page's login form).
func (s *Server) ui() http.Handler {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic("sidecar: embedded ui: " + err.Error()) // the embed pattern guarantees the folder
	}
	files := http.StripPrefix("/ui/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range uiHeaders {
			w.Header().Set(k, v)
		}
		files.ServeHTTP(w, r)
	})
}
