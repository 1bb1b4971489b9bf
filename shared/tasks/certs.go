package tasks

import (
	"cads/shared/domain"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"
)

// MinRSABits is the smallest subject key an origin certificate is issued for.
const MinRSABits = 2048

// caLifetime bounds every certificate the CA issues (MaxCertLifetime < it).
const caLifetime = 20 * 365 * 24 * time.Hour

// PublicKeyPEM reads a PEM RSA key (public: PKIX or PKCS#1; private:
// PKCS#8 or PKCS#1, reduced to its public half) and returns the public key
// as a PKIX PEM block.
func PublicKeyPEM(s string) (string, error) {
	b, rest := pem.Decode([]byte(strings.TrimSpace(s)))
	if b == nil {
		return "", errors.New("not a PEM block (-----BEGIN PUBLIC KEY----- ...)")
	}
	if len(strings.TrimSpace(string(rest))) > 0 {
		return "", errors.New("send exactly one PEM block")
	}
	var (
		key any
		err error
	)
	switch b.Type {
	case "PUBLIC KEY":
		key, err = x509.ParsePKIXPublicKey(b.Bytes)
	case "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(b.Bytes)
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(b.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(b.Bytes)
	default:
		return "", fmt.Errorf("PEM block %q is not an RSA key", b.Type)
	}
	if err != nil {
		return "", fmt.Errorf("the %s does not parse: %v", strings.ToLower(b.Type), err)
	}
	if priv, ok := key.(crypto.Signer); ok {
		key = priv.Public()
	}
	pub, ok := key.(*rsa.PublicKey)
	if !ok {
		return "", errors.New("the key is not an RSA key")
	}
	if pub.N.BitLen() < MinRSABits {
		return "", fmt.Errorf("the RSA key has %d bits; at least %d are required", pub.N.BitLen(), MinRSABits)
	}
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", fmt.Errorf("encode public key: %w", err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})), nil
}

// CAStore keeps the per-account certificate authorities.
type CAStore interface {
	GetCertificateAuthority(ctx context.Context, account string) (domain.CertificateAuthority, error)
	CreateCertificateAuthority(ctx context.Context, ca domain.CertificateAuthority) error
}

// authority is a loaded CA.
type authority struct {
	cert *x509.Certificate
	pem  string
	key  crypto.Signer
}

// accountCA returns the account's CA, creating it on first use. Two
// workers racing to create it both end up with the one that was stored.
func accountCA(ctx context.Context, st CAStore, account string, now time.Time) (authority, error) {
	ca, err := st.GetCertificateAuthority(ctx, account)
	if errors.Is(err, domain.ErrNotFound) {
		ca, err = newCA(account, now)
		if err != nil {
			return authority{}, err
		}
		err = st.CreateCertificateAuthority(ctx, ca)
		if domain.ErrorCode(err) == domain.Conflict {
			ca, err = st.GetCertificateAuthority(ctx, account)
		}
	}
	if err != nil {
		return authority{}, fmt.Errorf("certificate authority of account %s: %w", account, err)
	}
	return loadCA(ca)
}

func newCA(account string, now time.Time) (domain.CertificateAuthority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return domain.CertificateAuthority{}, fmt.Errorf("CA key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return domain.CertificateAuthority{}, err
	}
	ski := sha1.Sum(pubDER)
	tmpl := &x509.Certificate{
		SerialNumber:          randomSerial(),
		Subject:               pkix.Name{CommonName: "CADS origin CA for account " + account, Organization: []string{"Cloud Application Delivery Service"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
		SubjectKeyId:          ski[:],
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return domain.CertificateAuthority{}, fmt.Errorf("CA certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return domain.CertificateAuthority{}, fmt.Errorf("CA key: %w", err)
	}
	return domain.CertificateAuthority{
		Account: account,
		CertPEM: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})),
		KeyPEM:  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})),
		Created: now,
	}, nil
}

func loadCA(ca domain.CertificateAuthority) (authority, error) {
	cb, _ := pem.Decode([]byte(ca.CertPEM))
	kb, _ := pem.Decode([]byte(ca.KeyPEM))
	if cb == nil || kb == nil {
		return authority{}, errors.New("stored certificate authority is not PEM")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return authority{}, fmt.Errorf("stored CA certificate: %w", err)
	}
	k, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return authority{}, fmt.Errorf("stored CA key: %w", err)
	}
	signer, ok := k.(crypto.Signer)
	if !ok {
		return authority{}, errors.New("stored CA key cannot sign")
	}
	return authority{cert: cert, pem: ca.CertPEM, key: signer}, nil
}

// CertificateResult is the result of generate-origin-certificate.
type CertificateResult struct {
	Certificate      string    `json:"certificate"`
	CertificateChain string    `json:"certificate_chain"`
	CACertificate    string    `json:"ca_certificate"`
	SerialNumber     string    `json:"serial_number"`
	Hostnames        []string  `json:"hostnames"`
	NotBefore        time.Time `json:"not_before"`
	NotAfter         time.Time `json:"not_after"`
}

// issue signs an origin certificate for the public key and host names.
func (a authority) issue(pubPEM string, hostnames []string, notAfter, now time.Time) (CertificateResult, error) {
	b, _ := pem.Decode([]byte(pubPEM))
	if b == nil {
		return CertificateResult{}, errors.New("stored public key is not PEM")
	}
	pub, err := x509.ParsePKIXPublicKey(b.Bytes)
	if err != nil {
		return CertificateResult{}, fmt.Errorf("stored public key: %w", err)
	}
	if notAfter.After(a.cert.NotAfter) {
		notAfter = a.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:   randomSerial(),
		Subject:        pkix.Name{CommonName: hostnames[0]},
		DNSNames:       hostnames,
		NotBefore:      now.Add(-5 * time.Minute),
		NotAfter:       notAfter,
		KeyUsage:       x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:    []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		AuthorityKeyId: a.cert.SubjectKeyId,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, pub, a.key)
	if err != nil {
		return CertificateResult{}, fmt.Errorf("sign certificate: %w", err)
	}
	leaf := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return CertificateResult{
		Certificate: leaf, CertificateChain: leaf + a.pem, CACertificate: a.pem,
		SerialNumber: hex.EncodeToString(tmpl.SerialNumber.Bytes()), Hostnames: hostnames,
		NotBefore: tmpl.NotBefore.UTC(), NotAfter: notAfter.UTC(),
	}, nil
}

func randomSerial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	return n.Add(n, big.NewInt(1))
}
