package outbound

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestCheckAddr(t *testing.T) {
	tests := []struct {
		addr   string
		reason string // "" for a public address
	}{
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"93.184.215.14", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"192.0.1.1", ""},
		{"198.17.255.255", ""},
		{"198.20.0.0", ""},
		{"223.255.255.255", ""},
		{"2001:4860:4860::8888", ""},
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001:80b::200e", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2002:808:808::1", ""},

		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", `"this network"`},
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"100.64.0.1", "CGNAT"},
		{"100.127.255.255", "CGNAT"},
		{"127.0.0.1", "loopback"},
		{"127.255.255.254", "loopback"},
		{"169.254.169.254", "link-local"},
		{"172.16.5.4", "private"},
		{"172.31.255.255", "private"},
		{"192.0.0.8", "IETF"},
		{"192.0.2.1", "documentation"},
		{"192.88.99.1", "6to4"},
		{"192.168.1.1", "private"},
		{"198.18.0.1", "benchmarking"},
		{"198.19.255.255", "benchmarking"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"240.0.0.1", "reserved"},
		{"255.255.255.255", "broadcast"},

		{"::", "unspecified"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:169.254.169.254", "link-local"},
		{"::ffff:10.0.0.1", "private"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"::7f00:1", "not global unicast"}, // ::127.0.0.1, IPv4-compatible, deprecated
		{"64:ff9b::a9fe:a9fe", "embeds 169.254.169.254, link-local"},
		{"64:ff9b::7f00:1", "embeds 127.0.0.1, loopback"},
		{"64:ff9b:1::1", "local-use NAT64"},
		{"100::1", "discard-only"},
		{"2001::1", "IETF"}, // Teredo
		{"2001:db8::1", "documentation"},
		{"2002:a00:1::1", "embeds 10.0.0.1, private"},
		{"2002:7f00:1::", "embeds 127.0.0.1, loopback"},
		{"3fff::1", "documentation"},
		{"5f00::1", "not global unicast"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"febf::1", "link-local"},
		{"fec0::1", "site-local"},
		{"ff02::1", "multicast"},
		{"ff05::1:3", "multicast"},
		{"ff01::1", "multicast"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := CheckAddr(netip.MustParseAddr(tt.addr))
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("CheckAddr = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrPrivateAddress) {
				t.Fatalf("CheckAddr = %v, want ErrPrivateAddress", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.addr) || !strings.Contains(msg, tt.reason) {
				t.Fatalf("CheckAddr = %q, want the address and %q", msg, tt.reason)
			}
		})
	}
	if err := CheckAddr(netip.Addr{}); !errors.Is(err, ErrPrivateAddress) {
		t.Errorf("CheckAddr(invalid) = %v, want ErrPrivateAddress", err)
	}
}

// TestCheckAddrTricks: forms that some parsers read as a private address
// are not addresses to netip, so they reach the resolver, whose answer is
// what gets checked.
func TestCheckAddrTricks(t *testing.T) {
	for _, s := range []string{"0177.0.0.1", "0x7f.0.0.1", "2130706433", "127.1", "0x7f000001", "017700000001", "127.0.0.1.", " 127.0.0.1"} {
		if a, err := netip.ParseAddr(s); err == nil {
			t.Errorf("netip.ParseAddr(%q) = %v: it would skip the resolver", s, a)
		}
	}
}

// TestCheckLinkLocal: what a client allowed private addresses still
// refuses with DenyLinkLocal: link-local in every spelling and the cloud
// metadata services, but not loopback or private.
func TestCheckLinkLocal(t *testing.T) {
	tests := []struct {
		addr   string
		reason string // "" for an address it allows
	}{
		{"127.0.0.1", ""},
		{"::1", ""},
		{"10.0.0.1", ""},
		{"192.168.1.1", ""},
		{"fd12:3456::1", ""},
		{"8.8.8.8", ""},
		{"64:ff9b::7f00:1", ""},

		{"169.254.169.254", "cloud metadata service"},
		{"169.254.0.1", "link-local"},
		{"169.254.255.255", "link-local"},
		{"::ffff:169.254.169.254", "cloud metadata service"},
		{"64:ff9b::a9fe:a9fe", "embeds 169.254.169.254, link-local"},
		{"2002:a9fe:a9fe::1", "embeds 169.254.169.254, link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"febf::1", "link-local"},
		{"ff02::1", "link-local"},
		{"224.0.0.251", "link-local"},
		{"fd00:ec2::254", "cloud metadata service"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := CheckLinkLocal(netip.MustParseAddr(tt.addr))
			if tt.reason == "" {
				if err != nil {
					t.Fatalf("CheckLinkLocal = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrPrivateAddress) {
				t.Fatalf("CheckLinkLocal = %v, want ErrPrivateAddress", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.reason) {
				t.Fatalf("CheckLinkLocal = %q, want %q", msg, tt.reason)
			}
		})
	}
	if err := CheckLinkLocal(netip.Addr{}); !errors.Is(err, ErrPrivateAddress) {
		t.Errorf("CheckLinkLocal(invalid) = %v, want ErrPrivateAddress", err)
	}
}
