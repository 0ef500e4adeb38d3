package elicit

import (
	"errors"
	"strings"
	"testing"
)

func TestValidateURL(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://example.com", true},
		{"https://example.com:8443/a/b?c=d#e", true},
		{"HTTPS://EXAMPLE.COM/", true},
		{"https://xn--bcher-kva.example/", true},
		{"http://localhost", true},
		{"http://LocalHost:3000/cb", true},
		{"http://127.0.0.1:8080", true},
		{"http://127.8.9.10/", true},
		{"http://[::1]", true},
		{"http://[::1]:9000/x", true},

		{"http://example.com", false},
		{"http://10.0.0.1", false},
		{"http://localhost.example.com", false},
		{"http://[::2]", false},
		{"javascript:alert(1)", false},
		{"JavaScript:alert(1)", false},
		{"data:text/html,<script>alert(1)</script>", false},
		{"file:///etc/passwd", false},
		{"ftp://example.com/file", false},
		{"ws://example.com", false},
		{"https://user:pw@x", false},
		{"https://user@example.com", false},
		{"https://", false},
		{"https:///path", false},
		{"https://:443", false},
		{"https:example.com", false},
		{"//example.com", false},
		{"/relative/path", false},
		{"", false},
		{" https://example.com", false},
		{"https://exa mple.com", false},
		{"https://example.com/\x00", false},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := ValidateURL(tt.url)
			if tt.ok {
				if err != nil {
					t.Fatalf("ValidateURL(%q) = %v, want ok", tt.url, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("ValidateURL(%q) = nil, want refused", tt.url)
			}
			var ie *InvalidError
			if !errors.As(err, &ie) || ie.Field != "url" {
				t.Errorf("error %v is not an *InvalidError for url", err)
			}
			if tt.url != "" && strings.Contains(err.Error(), tt.url) {
				t.Errorf("error %q quotes the URL", err)
			}
		})
	}
}
