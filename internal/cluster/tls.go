package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// MutualTLS is what members present and accept on the connections between
// them: each has a certificate the cluster's CA signed, and accepts only
// peers with one. A member is reached at whatever address it advertises (a
// pod IP that changes), so a peer's name is not checked: holding a
// certificate of the cluster's CA is what makes it a member.
type MutualTLS struct {
	server, client *tls.Config
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
	return NewMutualTLS(cert, roots), nil
}

// NewMutualTLS is MutualTLS with cert, accepting peers roots signed.
func NewMutualTLS(cert tls.Certificate, roots *x509.CertPool) *MutualTLS {
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
	}
}
