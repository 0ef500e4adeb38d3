package oauth

import "testing"

// The device grant is offered by an endpoint for it, unless the grant
// types the server lists leave it out.
func TestOffersDevice(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    ServerMetadata
		want bool
	}{
		{"no endpoint", ServerMetadata{GrantTypesSupported: []string{GrantDeviceCode}}, false},
		{"endpoint, no grant list", ServerMetadata{DeviceAuthorizationEndpoint: "https://as.example/device"}, true},
		{"endpoint, listed", ServerMetadata{DeviceAuthorizationEndpoint: "https://as.example/device", GrantTypesSupported: []string{GrantAuthorizationCode, GrantDeviceCode}}, true},
		{"endpoint, left out", ServerMetadata{DeviceAuthorizationEndpoint: "https://as.example/device", GrantTypesSupported: []string{GrantAuthorizationCode}}, false},
	} {
		if got := offersDevice(&tc.m); got != tc.want {
			t.Errorf("%s: offersDevice = %v, want %v", tc.name, got, tc.want)
		}
	}
}
