package oauth

import "testing"

// Bearer unless the protected resource asks for DPoP (its metadata, or a
// challenge of the DPoP scheme alone) or the config does; "dpop": false
// always wins. The authorization server's
// advertising DPoP is not asking.
func TestWantDPoP(t *testing.T) {
	asDPoP := &ServerMetadata{DPoPSigningAlgValuesSupported: []string{"ES256", "EdDSA"}}
	plainAS := &ServerMetadata{}
	tests := []struct {
		name string
		mode DPoPMode
		d    *Discovery
		ch   Challenge
		want bool
	}{
		{"auto, server advertises DPoP, resource silent", DPoPAuto, &Discovery{Server: asDPoP, PRM: &ResourceMetadata{}}, Challenge{}, false},
		{"auto, server advertises DPoP, no resource metadata", DPoPAuto, &Discovery{Server: asDPoP}, Challenge{}, false},
		{"auto, resource requires DPoP", DPoPAuto, &Discovery{Server: asDPoP, PRM: &ResourceMetadata{DPoPBoundAccessTokensRequired: true}}, Challenge{}, true},
		{"auto, resource lists DPoP algorithms", DPoPAuto, &Discovery{Server: asDPoP, PRM: &ResourceMetadata{DPoPSigningAlgValuesSupported: []string{"ES256"}}}, Challenge{}, true},
		{"auto, nothing advertised", DPoPAuto, &Discovery{Server: plainAS, PRM: &ResourceMetadata{}}, Challenge{}, false},
		{"on, nothing advertised", DPoPOn, &Discovery{Server: plainAS, PRM: &ResourceMetadata{}}, Challenge{}, true},
		{"on, no resource metadata", DPoPOn, &Discovery{Server: plainAS}, Challenge{}, true},
		{"off, resource requires DPoP", DPoPOff, &Discovery{Server: asDPoP, PRM: &ResourceMetadata{DPoPBoundAccessTokensRequired: true}}, Challenge{}, false},
		{"off, resource lists DPoP algorithms", DPoPOff, &Discovery{Server: asDPoP, PRM: &ResourceMetadata{DPoPSigningAlgValuesSupported: []string{"ES256"}}}, Challenge{}, false},
		{"auto, resource challenges with DPoP only", DPoPAuto, &Discovery{Server: asDPoP, PRM: &ResourceMetadata{}}, Challenge{Scheme: "dpop"}, true},
		{"auto, resource challenges with Bearer", DPoPAuto, &Discovery{Server: asDPoP, PRM: &ResourceMetadata{}}, Challenge{Scheme: "bearer"}, false},
		{"off, resource challenges with DPoP only", DPoPOff, &Discovery{Server: asDPoP, PRM: &ResourceMetadata{}}, Challenge{Scheme: "dpop"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wantDPoP(tt.mode, tt.d, tt.ch); got != tt.want {
				t.Errorf("wantDPoP(%v) = %v, want %v", tt.mode, got, tt.want)
			}
		})
	}
}

// With DPoP off, no key is made and the authorization request carries
// no dpop_jkt, whatever the servers advertise.
func TestDPoPKeyOnlyWhenWanted(t *testing.T) {
	d := &Discovery{Server: &ServerMetadata{DPoPSigningAlgValuesSupported: []string{"ES256"}}, PRM: &ResourceMetadata{DPoPBoundAccessTokensRequired: true}}
	for _, tt := range []struct {
		mode    DPoPMode
		wantKey bool
	}{{DPoPOff, false}, {DPoPAuto, true}, {DPoPOn, true}} {
		a, err := New(Config{DPoP: tt.mode}, Options{Server: "s", URL: "https://mcp.example/mcp"})
		if err != nil {
			t.Fatal(err)
		}
		k, err := a.dpopKeyFor(d)
		if err != nil {
			t.Fatal(err)
		}
		if (k != nil) != tt.wantKey {
			t.Errorf("mode %v: key %v, want a key: %v", tt.mode, k != nil, tt.wantKey)
		}
		a.Close()
	}
}
