package perf

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"
)

// originFront is the API custom domain's regional endpoint as the edge
// deploys it: TLS 1.2 or later, requiring a client certificate that the
// truststore's certificate authority issued (API Gateway's mutual TLS,
// EdgeTruststoreUri). A connection without one is refused in the TLS
// handshake and never reaches what is behind it (the stage throttle, the
// function); one with it is forwarded there. CloudFront presents the
// certificate (origin mutual TLS, EdgeClientCertificateArn): Client gives
// the edge that TLS configuration, Stranger a caller's who has none.
//
// AWS documents that an API Gateway custom domain with mutual TLS fails
// the handshake of a client whose certificate it does not trust; it does
// not document whether such a refusal counts against the stage's or the
// account's throttle. This front refuses before the throttle, as a
// handshake that never completes carries no request to count.
type originFront struct {
	URL string
	srv *http.Server
	// Client holds the edge's client certificate and trusts the front's
	// server certificate; Stranger only trusts it.
	Client, Stranger *tls.Config
}

// startOrigin serves target behind a TLS listener on loopback that
// requires a client certificate of a certificate authority made for the
// run.
func startOrigin(target string) (*originFront, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ca, err := newAuthority("oncecall bench origin CA")
	if err != nil {
		return nil, err
	}
	server, err := ca.issue("127.0.0.1", x509.ExtKeyUsageServerAuth)
	if err != nil {
		return nil, err
	}
	client, err := ca.issue("oncecall bench edge", x509.ExtKeyUsageClientAuth)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	f := &originFront{
		URL:      "https://" + ln.Addr().String() + u.Path,
		Client:   &tls.Config{RootCAs: ca.pool, Certificates: []tls.Certificate{client}, MinVersion: tls.VersionTLS12},
		Stranger: &tls.Config{RootCAs: ca.pool, MinVersion: tls.VersionTLS12},
	}
	fwd := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	f.srv = &http.Server{
		ReadHeaderTimeout: 5 * time.Second,
		Handler:           fwd,
		// A refused handshake is the expected answer to a stranger here.
		ErrorLog: log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{server},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    ca.pool,
			MinVersion:   tls.VersionTLS12,
		},
	}
	go func() { _ = f.srv.ServeTLS(ln, "", "") }()
	return f, nil
}

func (f *originFront) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = f.srv.Shutdown(ctx)
}

// refusedInHandshake reports whether err is a TLS handshake the server
// refused (no certificate, or one it does not trust).
func refusedInHandshake(err error) bool {
	var ue *url.Error
	return err != nil && errors.As(err, &ue) && strings.Contains(err.Error(), "tls: ")
}

// authority is a certificate authority made for one run.
type authority struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newAuthority(name string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &authority{cert: cert, key: key, pool: pool}, nil
}

// issue makes a certificate for name (an IP address for a server) with
// the extended key usage use.
func (a *authority) issue(name string, use x509.ExtKeyUsage) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	serial, err := rand.Int(rand.Reader, big.NewInt(1<<62))
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{use},
	}
	if ip := net.ParseIP(name); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}
