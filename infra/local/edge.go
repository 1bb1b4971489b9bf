package local

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"golang.org/x/sync/errgroup"

	"cads/shared/applications/appconfig"
	"cads/shared/domain"
	"cads/shared/loadgen"
	"cads/shared/store"
	"cads/shared/wire"
)

// EdgeApplicationHeader names, in the edge's answers, the application
// that answered.
const EdgeApplicationHeader = "X-Edge-Application"

// Edge is the local platform's stand-in for the platform's edge, the front
// door of the applications: it answers HTTP and HTTPS requests whose Host
// (or TLS server name) is an alias of an existing application, of any
// account (an alias belongs to exactly one application), and refuses every
// other host (421, or a failed handshake). It
// forwards nothing anywhere: the data plane is not part of this project,
// so it answers for the application itself. Application test runs send
// every request here (wire.Edge, loadgen.Edge).
type Edge struct {
	// HTTPAddr and TLSAddr are its listeners' host:port; RootCAs trust the
	// certificates it makes for aliases.
	HTTPAddr, TLSAddr string
	RootCAs           *x509.CertPool

	aliases *aliasIndex
	ca      *edgeCA
	log     *slog.Logger

	mu     sync.Mutex
	served map[[2]string]int // (host, load id) -> answered requests
}

// WireEdge is the edge as the functions' dependencies address it (the
// test runner's load generator sends there).
func (e *Edge) WireEdge() wire.Edge {
	return wire.Edge{Addr: e.HTTPAddr, TLSAddr: e.TLSAddr, RootCAs: e.RootCAs}
}

// Served is how many requests for host (an alias, lower case) carrying
// load id the edge has answered.
func (e *Edge) Served(host, loadID string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.served[[2]string{host, loadID}]
}

// startEdge starts the edge on two free loopback ports; stop closes them.
func startEdge(db *dynamodb.Client, table string, log *slog.Logger) (*Edge, func(context.Context) error, error) {
	ca, err := newEdgeCA()
	if err != nil {
		return nil, nil, err
	}
	e := &Edge{aliases: &aliasIndex{st: store.New(db, table)}, ca: ca, log: log, served: map[[2]string]int{}}
	e.RootCAs = x509.NewCertPool()
	e.RootCAs.AddCert(ca.cert)

	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("edge listener: %w", err)
	}
	secure, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = plain.Close()
		return nil, nil, fmt.Errorf("edge TLS listener: %w", err)
	}
	e.HTTPAddr, e.TLSAddr = plain.Addr().String(), secure.Addr().String()
	srv := &http.Server{Handler: e, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: e.certificate}}
	var g errgroup.Group // a server that stops is logged; stop waits for both
	for _, serve := range []func() error{
		func() error { return srv.Serve(plain) },
		func() error { return srv.ServeTLS(secure, "", "") },
	} {
		g.Go(func() error {
			if err := serve(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("edge server stopped", "error", err.Error())
			}
			return nil
		})
	}
	stop := func(ctx context.Context) error { err := srv.Shutdown(ctx); _ = g.Wait(); return err }
	return e, stop, nil
}

// ServeHTTP answers a request for an alias; any other host is 421.
func (e *Edge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := domain.AliasKey(r.Host)
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	app, ok, err := e.aliases.lookup(r.Context(), host)
	if err != nil {
		e.log.ErrorContext(r.Context(), "edge: aliases not readable", "error", err.Error())
		http.Error(w, "the edge cannot read the applications", http.StatusServiceUnavailable)
		return
	}
	if !ok {
		http.Error(w, fmt.Sprintf("no application has the alias %q", host), http.StatusMisdirectedRequest)
		return
	}
	e.mu.Lock()
	e.served[[2]string{host, r.Header.Get(loadgen.LoadIDHeader)}]++
	e.mu.Unlock()
	w.Header().Set(EdgeApplicationHeader, app)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = fmt.Fprintf(w, "local edge: application %s answers for %s\n", app, host)
}

// certificate makes (once per name) a certificate for an alias; other
// server names get none.
func (e *Edge) certificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	name := domain.AliasKey(hello.ServerName)
	_, ok, err := e.aliases.lookup(hello.Context(), name)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("no application has the alias %q", name)
	}
	return e.ca.leaf(name)
}

// aliasIndex finds the application an alias names: the one whose claim
// item (store.AliasOwner) holds it. An alias belongs to one application
// of the whole installation, so a host has exactly one answer, read
// consistently on every request: an alias is served as soon as its
// application has it and no longer once it is dropped.
type aliasIndex struct {
	st *store.Store
}

func (x *aliasIndex) lookup(ctx context.Context, host string) (string, bool, error) {
	if host == "" || len(host) > appconfig.MaxHostnameLen {
		return "", false, nil // no alias is spelled so; and no key may be
	}
	app, _, err := x.st.Applications.AliasOwner(ctx, host)
	if errors.Is(err, domain.ErrNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("edge: read the alias %q: %w", host, err)
	}
	return app, true, nil
}

// edgeCA signs the edge's certificates; it lives as long as the platform.
type edgeCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

func newEdgeCA() (*edgeCA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("edge CA key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "local edge CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("edge CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("edge CA certificate: %w", err)
	}
	return &edgeCA{cert: cert, key: key, leaves: map[string]*tls.Certificate{}}, nil
}

func (ca *edgeCA) leaf(name string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[name]; ok {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("edge certificate key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(now.UnixNano()), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: now.Add(-time.Hour), NotAfter: ca.cert.NotAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, fmt.Errorf("edge certificate for %s: %w", name, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	ca.leaves[name] = c
	return c, nil
}
