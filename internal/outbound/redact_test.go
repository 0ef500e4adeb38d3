package outbound

import "testing"

func TestRedact(t *testing.T) {
	tests := []struct {
		name    string
		s       string
		secrets []string
		want    string
	}{
		{"none", "GET /mcp: 401", []string{"sk-live-123"}, "GET /mcp: 401"},
		{"no secrets", "Bearer sk-live-123", nil, "Bearer sk-live-123"},
		{"one", "Authorization: Bearer sk-live-123", []string{"sk-live-123"}, "Authorization: Bearer [redacted]"},
		{"every occurrence", "k=abcd&again=abcd!abcd", []string{"abcd"}, "k=[redacted]&again=[redacted]![redacted]"},
		{"several", "key=sk-live-123 session=9f8e7d6c", []string{"sk-live-123", "9f8e7d6c"}, "key=[redacted] session=[redacted]"},
		{"short secrets ignored", "id=abc x=", []string{"abc", "", "x"}, "id=abc x="},
		{"four bytes is enough", "pin 1234", []string{"1234"}, "pin [redacted]"},
		{"nested: the longer wins whatever the order", "token=abcdefgh", []string{"abcd", "abcdefgh"}, "token=[redacted]"},
		{"nested, other order", "token=abcdefgh", []string{"abcdefgh", "efgh"}, "token=[redacted]"},
		{"overlapping occurrences", "xxababab", []string{"abab"}, "xx[redacted]"},
		{"overlapping secrets", "1234567", []string{"12345", "34567"}, "[redacted]"},
		{"adjacent", "abcdabcd", []string{"abcd"}, "[redacted][redacted]"},
		{"not inside the replacement", "secret dact", []string{"secret", "dact"}, "[redacted] [redacted]"},
		{"whole string", "sk-live-123", []string{"sk-live-123"}, "[redacted]"},
		{"case-sensitive", "SK-LIVE-123", []string{"sk-live-123"}, "SK-LIVE-123"},
		{"utf-8", "clé=motdepasse€ ok", []string{"motdepasse€"}, "clé=[redacted] ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Redact(tt.s, tt.secrets...); got != tt.want {
				t.Fatalf("Redact(%q, %q) = %q, want %q", tt.s, tt.secrets, got, tt.want)
			}
		})
	}
}

func TestRedactDoesNotAllocateWithoutSecrets(t *testing.T) {
	s := "POST https://mcp.example/mcp: 503 Service Unavailable"
	if n := testing.AllocsPerRun(100, func() { Redact(s, "sk-live-123", "9f8e7d6c") }); n != 0 {
		t.Fatalf("Redact allocated %v times", n)
	}
}
