package appconfig

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"sync"
	"time"
)

// CoveredAlias says whether the certificate chain serves an alias.
type CoveredAlias struct {
	Name     string    `json:"name"`
	NotAfter time.Time `json:"not_after"`
	Trusted  bool      `json:"trusted"`
}

// ParseChain parses a PEM certificate chain, leaf first. Anything but
// certificates in it is refused: a private key pasted into the chain must
// not be stored in a readable configuration.
func ParseChain(chain string) ([]*x509.Certificate, error) {
	rest := []byte(chain)
	var certs []*x509.Certificate
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("PEM block %d is %q; the chain holds CERTIFICATE blocks only (private keys never go in the configuration)", len(certs)+1, b.Type)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d does not parse: %v", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, errors.New("no PEM CERTIFICATE block found")
	}
	return certs, nil
}

var systemRoots = sync.OnceValues(x509.SystemCertPool)

// Covered computes covered_aliases: the aliases the chain's leaf names,
// with its expiry and whether it verifies against the system's trusted
// roots at now.
func Covered(c Configuration, now time.Time) []CoveredAlias {
	if c.TLS == nil || c.TLS.CertificateChain == "" {
		return nil
	}
	certs, err := ParseChain(c.TLS.CertificateChain)
	if err != nil {
		return nil
	}
	leaf := certs[0]
	inter := x509.NewCertPool()
	for _, ic := range certs[1:] {
		inter.AddCert(ic)
	}
	roots, rootsErr := systemRoots()
	var out []CoveredAlias
	for _, a := range c.Aliases {
		if leaf.VerifyHostname(a) != nil {
			continue
		}
		ca := CoveredAlias{Name: a, NotAfter: leaf.NotAfter.UTC()}
		if rootsErr == nil {
			_, verr := leaf.Verify(x509.VerifyOptions{DNSName: a, Intermediates: inter, Roots: roots, CurrentTime: now})
			ca.Trusted = verr == nil
		}
		out = append(out, ca)
	}
	return out
}
