package elicit

import (
	"net/netip"
	"net/url"
	"strings"
)

// ValidateURL checks the URL of a url-mode elicitation before it is shown to
// anyone. It must be absolute with a host and no userinfo (user:pass@, which
// can disguise the real host); its scheme must be https, or http for a
// loopback host (localhost, 127.0.0.0/8, ::1). Every other scheme, among them
// javascript:, data: and file:, is refused. The URL is never fetched.
//
// The error is an *InvalidError for the "url" parameter and does not quote
// the URL.
func ValidateURL(raw string) error {
	if raw == "" {
		return invalid("url", "is empty")
	}
	if strings.TrimSpace(raw) != raw {
		return invalid("url", "has surrounding whitespace")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return invalid("url", "is not a valid URL")
	}
	if !u.IsAbs() {
		return invalid("url", "is not absolute")
	}
	switch u.Scheme {
	case "https", "http":
	default:
		return invalid("url", "has a scheme other than https")
	}
	if u.Opaque != "" {
		return invalid("url", "has no host")
	}
	if u.User != nil {
		return invalid("url", "carries userinfo (user:password@)")
	}
	host := u.Hostname()
	if host == "" {
		return invalid("url", "has no host")
	}
	if u.Scheme == "http" && !loopback(host) {
		return invalid("url", "uses http for a host that is not loopback")
	}
	return nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	addr, err := netip.ParseAddr(host)
	return err == nil && addr.IsLoopback()
}
