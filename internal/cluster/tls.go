package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// MutualTLS is what members present and accept on the connections between
// them: each has a certificate the cluster's CA signed, and accepts only
// peers with one. A member is reached at whatever address it advertises (a
// pod IP that changes), so a peer's address is not checked against its
// certificate; its name is: a member's name is its certificate's
// CommonName, its id in the cluster begins with that name (MemberName),
// and what arrives over a connection is held to the name its peer's
// certificate gives.
type MutualTLS struct {
	server, client *tls.Config
	name           string // the CommonName of this member's certificate
}

// Name is this member's name: its certificate's CommonName.
func (m *MutualTLS) Name() string { return m.name }

// ServerConfig and ClientConfig are the two ends' TLS configurations
// (the automanaged membership serves and asks over them too).
func (m *MutualTLS) ServerConfig() *tls.Config { return m.server.Clone() }

// ClientConfig: see ServerConfig.
func (m *MutualTLS) ClientConfig() *tls.Config { return m.client.Clone() }

// memberSep separates a member's name from the rest of its id: an id is
// unique to one join (protoactor never takes back an id it dropped), a
// name is the member's for good.
const memberSep = "~"

// MemberName is the name in a member id ("" when it has none).
func MemberName(id string) string {
	i := strings.LastIndex(id, memberSep)
	if i <= 0 {
		return ""
	}
	return id[:i]
}

// checkMemberName refuses a name that cannot be read back from an id.
func checkMemberName(name string) error {
	if name == "" {
		return errors.New("cluster: a member needs a name (its certificate's CommonName)")
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_') {
			return fmt.Errorf("cluster: member name %q: want letters, digits, '.', '-' and '_'", name)
		}
	}
	return nil
}

// peerName is the CommonName of the verified certificate a gRPC stream's
// peer presented: ok is false when the stream is not over TLS or its peer
// presented none.
func peerName(ctx context.Context) (string, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return "", false
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return "", false
	}
	return info.State.PeerCertificates[0].Subject.CommonName, true
}

// LoadMutualTLS reads a member's certificate and key (PEM) and the
// cluster CA's certificates (PEM).
func LoadMutualTLS(certFile, keyFile, caFile string) (*MutualTLS, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("cluster: TLS certificate %s and key %s: %w", certFile, keyFile, err)
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("cluster: TLS CA: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("cluster: TLS CA %s holds no PEM certificate", caFile)
	}
	return NewMutualTLS(cert, roots)
}

// NewMutualTLS is MutualTLS with cert, accepting peers roots signed; the
// member's name is cert's CommonName, which must be a member name
// (letters, digits, '.', '-', '_').
func NewMutualTLS(cert tls.Certificate, roots *x509.CertPool) (*MutualTLS, error) {
	leaf := cert.Leaf
	if leaf == nil && len(cert.Certificate) > 0 {
		var err error
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("cluster: TLS certificate: %w", err)
		}
	}
	if leaf == nil {
		return nil, errors.New("cluster: TLS: no certificate")
	}
	if err := checkMemberName(leaf.Subject.CommonName); err != nil {
		return nil, fmt.Errorf("cluster: TLS certificate's CommonName: %w", err)
	}
	verify := func(usage x509.ExtKeyUsage) func(tls.ConnectionState) error {
		return func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("cluster: the peer presented no certificate")
			}
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
			if err != nil {
				return fmt.Errorf("cluster: the peer's certificate: %w", err)
			}
			return nil
		}
	}
	return &MutualTLS{
		name: leaf.Subject.CommonName,
		server: &tls.Config{
			MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
			ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: roots,
			VerifyConnection: verify(x509.ExtKeyUsageClientAuth),
		},
		client: &tls.Config{
			MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert},
			// The chain is verified against the cluster's CA below; the
			// name is not, by design (MutualTLS).
			InsecureSkipVerify: true, //nolint:gosec
			VerifyConnection:   verify(x509.ExtKeyUsageServerAuth),
		},
	}, nil
}
