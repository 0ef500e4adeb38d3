package outbound

import (
	"fmt"
	"net/netip"
	"slices"
)

// nonPublicPrefixes are the ranges that are not globally routable and that
// net/netip's classification does not flag (IANA special-purpose address
// registries, RFC 6890 and later). fc00::/7 (IsPrivate) and fe80::/10
// (IsLinkLocalUnicast) are flagged by netip.
var nonPublicPrefixes = []struct {
	prefix netip.Prefix
	reason string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), `"this network"`},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared address space (CGNAT)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay anycast"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"}, // before 240.0.0.0/4, which holds it
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},

	{netip.MustParsePrefix("64:ff9b:1::/48"), "local-use NAT64"},
	{netip.MustParsePrefix("100::/64"), "discard-only"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation"},
	{netip.MustParsePrefix("3fff::/20"), "documentation"},
	{netip.MustParsePrefix("fec0::/10"), "site-local"},
}

var (
	// nat64 is the well-known NAT64 prefix (RFC 6052): its last 32 bits are
	// the IPv4 address a NAT64 gateway connects to.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// sixToFour is 6to4 (RFC 3056): bits 16 to 48 are an IPv4 address.
	sixToFour = netip.MustParsePrefix("2002::/16")
	// globalUnicast is the only IPv6 space IANA allocates for global
	// unicast; everything outside it is reserved or special.
	globalUnicast = netip.MustParsePrefix("2000::/3")
)

// CheckAddr returns an error wrapping ErrPrivateAddress if a is not a
// globally routable unicast address: loopback, private, link-local,
// multicast, unspecified, and the special-purpose ranges the standard
// library does not flag (CGNAT 100.64.0.0/10, documentation, benchmarking,
// reserved, broadcast, unique local, site-local, IPv6 outside 2000::/3).
//
// An IPv4-mapped IPv6 address is checked as the IPv4 address it maps, and so
// is the IPv4 address inside a NAT64 (64:ff9b::/96) or 6to4 (2002::/16)
// address, which a gateway would connect to. An invalid Addr is refused.
// Parse addresses with netip.ParseAddr, never by hand: it rejects the octal
// and hexadecimal forms that other parsers read as other addresses.
func CheckAddr(a netip.Addr) error {
	if reason := nonPublic(a); reason != "" {
		return fmt.Errorf("%w: %s (%s)", ErrPrivateAddress, a, reason)
	}
	return nil
}

// cloudMetadata are the instance metadata services' addresses outside the
// link-local ranges: AWS's IPv6 endpoint is a unique local address.
var cloudMetadata = []netip.Addr{
	netip.MustParseAddr("fd00:ec2::254"),
}

// CheckLinkLocal returns an error wrapping ErrPrivateAddress if a is
// link-local (169.254.0.0/16, fe80::/10, also inside an IPv4-mapped, NAT64
// or 6to4 address) or a cloud metadata service's address (169.254.169.254,
// fd00:ec2::254): what a client allowed private addresses still refuses
// when Options.DenyLinkLocal is set.
func CheckLinkLocal(a netip.Addr) error {
	if reason := linkLocal(a); reason != "" {
		return fmt.Errorf("%w: %s (%s)", ErrPrivateAddress, a, reason)
	}
	return nil
}

// linkLocal returns why a is refused even to a client allowed private
// addresses with DenyLinkLocal, or "".
func linkLocal(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid address"
	}
	a = a.Unmap().WithZone("")
	if slices.Contains(cloudMetadata, a) {
		return "cloud metadata service"
	}
	if v4 := embeddedV4(a); v4.IsValid() {
		if reason := linkLocal(v4); reason != "" {
			return "embeds " + v4.String() + ", " + reason
		}
		return ""
	}
	if a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() {
		if a == netip.AddrFrom4([4]byte{169, 254, 169, 254}) {
			return "link-local, cloud metadata service"
		}
		return "link-local"
	}
	return ""
}

// embeddedV4 is the IPv4 address inside a NAT64 (64:ff9b::/96) or 6to4
// (2002::/16) address, which a gateway would connect to; invalid for any
// other address.
func embeddedV4(a netip.Addr) netip.Addr {
	if !a.Is6() {
		return netip.Addr{}
	}
	b := a.As16()
	switch {
	case nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16]))
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6]))
	}
	return netip.Addr{}
}

// nonPublic returns why a is not globally routable, or "" if it is.
func nonPublic(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid address"
	}
	// A zoned address never matches a prefix; the zone does not change
	// where the address leads.
	a = a.Unmap().WithZone("")
	switch {
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a.IsPrivate():
		return "private"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast(), a.IsMulticast():
		return "multicast"
	}
	if v4 := embeddedV4(a); v4.IsValid() {
		if reason := nonPublic(v4); reason != "" {
			return "embeds " + v4.String() + ", " + reason
		}
		return ""
	}
	for _, p := range nonPublicPrefixes {
		if p.prefix.Contains(a) {
			return p.reason
		}
	}
	if a.Is6() && !globalUnicast.Contains(a) {
		return "not global unicast"
	}
	return ""
}
