package frontdoor_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/frontdoor"
	"github.com/mergectl/react-triton/sidecar/internal/sidecartest"
	"github.com/mergectl/react-triton/sidecar/metrics"
	"github.com/mergectl/react-triton/sidecar/passthrough"
	"github.com/mergectl/react-triton/sidecar/server"
)

// testCA is a certificate authority for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial int64

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a leaf certificate and its key (PEM) for a server on
// 127.0.0.1 (server true) or a client.
func (ca *testCA) issue(t *testing.T, name string, server bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
		tmpl.DNSNames = []string{"localhost"}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}

// writeAtomic replaces a file by a rename, as a Secret update does.
func writeAtomic(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tlsFiles writes a server certificate of ca and, when clients is not nil,
// its PEM as the client CA; it returns the configuration.
func tlsFiles(t *testing.T, dir string, ca *testCA, clients *testCA) config.ServerTLS {
	t.Helper()
	c := config.ServerTLS{Enabled: true, CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	cert, key := ca.issue(t, "sidecar", true)
	writeAtomic(t, c.CertFile, cert)
	writeAtomic(t, c.KeyFile, key)
	if clients != nil {
		c.ClientCAFile = filepath.Join(dir, "clients.crt")
		writeAtomic(t, c.ClientCAFile, clients.pem)
	}
	return c
}

// clientTLS is a client configuration trusting ca, with a certificate of
// clientCA when it is not nil.
func clientTLS(t *testing.T, ca *testCA, clientCA *testCA) *tls.Config {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.pem)
	c := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	if clientCA != nil {
		certPEM, keyPEM := clientCA.issue(t, "client", false)
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c
}

// tlsCalls makes a gRPC call and an HTTP request over TLS with cfg, and
// returns their errors.
func tlsCalls(t *testing.T, s *server.Server, cfg *tls.Config) (grpcErr, httpErr error) {
	t.Helper()
	conn, err := grpc.NewClient(s.GRPCAddr().String(), grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	grpcErr = sidecartest.InvokeRaw(ctx, conn, passthrough.Service+"ServerLive")
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	resp, err := client.Get("https://" + s.HTTPAddr().String() + "/v2/health/live")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = &httpStatusError{resp.StatusCode}
		}
	}
	return grpcErr, err
}

type httpStatusError struct{ code int }

func (e *httpStatusError) Error() string { return http.StatusText(e.code) }

// TestTLSListeners: with TLS on, both listeners speak TLS only, with the
// configured certificate; HTTP stays HTTP/1.1 as Triton's.
func TestTLSListeners(t *testing.T) {
	ca := newTestCA(t, "ca")
	certs, err := frontdoor.NewCertStore(tlsFiles(t, t.TempDir(), ca, nil), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sidecartest.StartRecorded(t, server.Config{TLS: certs})
	if gerr, herr := tlsCalls(t, s, clientTLS(t, ca, nil)); gerr != nil || herr != nil {
		t.Fatalf("over TLS: gRPC %v, HTTP %v", gerr, herr)
	}
	// A client that does not trust the CA fails; a plain one too.
	if gerr, herr := tlsCalls(t, s, clientTLS(t, newTestCA(t, "other"), nil)); gerr == nil || herr == nil {
		t.Errorf("with another CA: gRPC %v, HTTP %v", gerr, herr)
	}
	resp, err := http.Get("http://" + s.HTTPAddr().String() + "/v2/health/live")
	if err == nil && resp.StatusCode == http.StatusOK {
		t.Error("plain HTTP served on a TLS listener")
	}
	if err == nil {
		resp.Body.Close()
	}
	// HTTP/1.1 only, even to a client offering h2.
	cfg := clientTLS(t, ca, nil)
	cfg.NextProtos = []string{"h2", "http/1.1"}
	c, err := tls.Dial("tcp", s.HTTPAddr().String(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p := c.ConnectionState().NegotiatedProtocol; p == "h2" {
		t.Errorf("HTTP listener negotiated %q", p)
	}
}

// TestMutualTLS: with a client CA, a client without a certificate, or
// with one from another CA, is refused on both listeners; one with a
// certificate of the CA is served. The metrics listener asks for none.
func TestMutualTLS(t *testing.T) {
	ca, clients := newTestCA(t, "ca"), newTestCA(t, "clients")
	certs, err := frontdoor.NewCertStore(tlsFiles(t, t.TempDir(), ca, clients), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	s, _ := sidecartest.StartRecorded(t, server.Config{TLS: certs, MetricsTLS: true, MetricsListen: "127.0.0.1:0", MetricsHandler: m.Handler()})
	if gerr, herr := tlsCalls(t, s, clientTLS(t, ca, clients)); gerr != nil || herr != nil {
		t.Fatalf("with a client certificate: gRPC %v, HTTP %v", gerr, herr)
	}
	for name, cfg := range map[string]*tls.Config{
		"no client certificate":    clientTLS(t, ca, nil),
		"another CA's certificate": clientTLS(t, ca, newTestCA(t, "intruders")),
	} {
		if gerr, herr := tlsCalls(t, s, cfg); gerr == nil || herr == nil {
			t.Errorf("%s: gRPC %v, HTTP %v, want both refused", name, gerr, herr)
		}
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: clientTLS(t, ca, nil)}}
	resp, err := client.Get("https://" + s.MetricsAddr().String() + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("metrics over TLS without a client certificate: %v %v", resp, err)
	}
	if err == nil {
		resp.Body.Close()
	}
}

// servedCert returns the subject of the certificate the HTTP listener
// presents now.
func servedCert(t *testing.T, addr string, cfg *tls.Config) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return "error: " + err.Error()
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestCertificateReload: a certificate replaced on disk serves from the
// next connection on, without a restart, once Watch sees the change (or
// Reload is called); a broken pair is refused and the old one keeps
// serving; connections open meanwhile go on.
func TestCertificateReload(t *testing.T) {
	dir := t.TempDir()
	ca := newTestCA(t, "ca")
	files := tlsFiles(t, dir, ca, nil)
	m := metrics.New()
	certs, err := frontdoor.NewCertStore(files, nil, m)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go certs.Watch(ctx)
	s, _ := sidecartest.StartRecorded(t, server.Config{TLS: certs})
	cfg := clientTLS(t, ca, nil)
	// A connection that stays open across the change.
	conn, err := grpc.NewClient(s.GRPCAddr().String(), grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := sidecartest.InvokeRaw(context.Background(), conn, passthrough.Service+"ServerLive"); err != nil {
		t.Fatal(err)
	}
	first := servedCert(t, s.HTTPAddr().String(), cfg)

	// A new certificate, key first then certificate, as a careless writer
	// would: in between, the pair does not match and the old one serves.
	cert, key := ca.issue(t, "sidecar-2", true)
	writeAtomic(t, files.KeyFile, key)
	time.Sleep(2 * frontdoor.TLSDebounce)
	if got := servedCert(t, s.HTTPAddr().String(), cfg); got != first {
		t.Errorf("with a key that does not match: served %s, want the old %s", got, first)
	}
	writeAtomic(t, files.CertFile, cert)
	block, _ := pem.Decode(cert)
	leaf, _ := x509.ParseCertificate(block.Bytes)
	sidecartest.WaitFor(t, 5*time.Second, "the new certificate", func() bool { return servedCert(t, s.HTTPAddr().String(), cfg) == leaf.SerialNumber.String() })
	if err := sidecartest.InvokeRaw(context.Background(), conn, passthrough.Service+"ServerLive"); err != nil {
		t.Errorf("the connection open across the change: %v", err)
	}
	fams := sidecartest.Scrape(t, m.Handler())
	if ok, _ := sidecartest.MetricValue(fams, "react_tls_last_reload_successful", nil); ok != 1 {
		t.Errorf("react_tls_last_reload_successful = %v", ok)
	}
	if failed, _ := sidecartest.MetricValue(fams, "react_tls_reloads_total", map[string]string{"result": "failure"}); failed < 1 {
		t.Errorf("react_tls_reloads_total{failure} = %v, want the mismatched pair counted", failed)
	}
	if exp, _ := sidecartest.MetricValue(fams, "react_tls_certificate_not_after_timestamp_seconds", nil); int64(exp) != leaf.NotAfter.Unix() {
		t.Errorf("not_after = %v, want %d", exp, leaf.NotAfter.Unix())
	}
	if got := certs.NotAfter(); !got.Equal(leaf.NotAfter) {
		t.Errorf("CertStore.NotAfter (logged at start) = %v, want %v", got, leaf.NotAfter)
	}

	// A CA rotation: a certificate of a new CA, picked up by Reload (SIGHUP).
	ca2 := newTestCA(t, "ca2")
	cert2, key2 := ca2.issue(t, "sidecar-3", true)
	os.WriteFile(files.CertFile, cert2, 0o600)
	os.WriteFile(files.KeyFile, key2, 0o600)
	if err := certs.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := servedCert(t, s.HTTPAddr().String(), clientTLS(t, ca2, nil)); strings.HasPrefix(got, "error") {
		t.Errorf("after Reload: %s", got)
	}
	// Garbage is refused by Reload, and the last good pair serves.
	os.WriteFile(files.CertFile, []byte("not a certificate"), 0o600)
	if err := certs.Reload(); err == nil || !strings.Contains(err.Error(), "server.tls") {
		t.Errorf("Reload of garbage: %v", err)
	}
	if got := servedCert(t, s.HTTPAddr().String(), clientTLS(t, ca2, nil)); strings.HasPrefix(got, "error") {
		t.Errorf("after a failed Reload: %s", got)
	}
}

// TestClientCARotation: a client CA replaced on disk takes effect at the
// next handshake after Reload: a certificate of the new CA is served and
// one of the old CA refused, on both listeners.
func TestClientCARotation(t *testing.T) {
	ca, oldClients, newClients := newTestCA(t, "ca"), newTestCA(t, "clients-1"), newTestCA(t, "clients-2")
	files := tlsFiles(t, t.TempDir(), ca, oldClients)
	certs, err := frontdoor.NewCertStore(files, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sidecartest.StartRecorded(t, server.Config{TLS: certs})
	if gerr, herr := tlsCalls(t, s, clientTLS(t, ca, oldClients)); gerr != nil || herr != nil {
		t.Fatalf("before the rotation: gRPC %v, HTTP %v", gerr, herr)
	}
	writeAtomic(t, files.ClientCAFile, newClients.pem)
	if err := certs.Reload(); err != nil {
		t.Fatal(err)
	}
	if gerr, herr := tlsCalls(t, s, clientTLS(t, ca, newClients)); gerr != nil || herr != nil {
		t.Errorf("a certificate of the new client CA: gRPC %v, HTTP %v", gerr, herr)
	}
	if gerr, herr := tlsCalls(t, s, clientTLS(t, ca, oldClients)); gerr == nil || herr == nil {
		t.Errorf("a certificate of the old client CA: gRPC %v, HTTP %v, want both refused", gerr, herr)
	}
}

// TestTLSMinVersion: a client that speaks at most TLS 1.1 is refused on
// both listeners.
func TestTLSMinVersion(t *testing.T) {
	ca := newTestCA(t, "ca")
	certs, err := frontdoor.NewCertStore(tlsFiles(t, t.TempDir(), ca, nil), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sidecartest.StartRecorded(t, server.Config{TLS: certs})
	cfg := clientTLS(t, ca, nil)
	cfg.MinVersion, cfg.MaxVersion = tls.VersionTLS10, tls.VersionTLS11
	if gerr, herr := tlsCalls(t, s, cfg); gerr == nil || herr == nil {
		t.Errorf("TLS 1.1: gRPC %v, HTTP %v, want both refused", gerr, herr)
	}
}

// secretVolume lays out dir as the kubelet mounts a Secret: the files in a
// timestamped directory, a ..data symlink to it, and each file a symlink
// through ..data. Each call is an update, swapping ..data atomically as the
// kubelet's atomic writer does.
type secretVolume struct {
	dir string
	n   int
}

func (v *secretVolume) update(t *testing.T, files map[string][]byte) {
	t.Helper()
	v.n++
	ts := fmt.Sprintf("..2026_11_27_%02d", v.n)
	if err := os.Mkdir(filepath.Join(v.dir, ts), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(v.dir, ts, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(v.dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(v.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(v.dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// TestCertificateReloadSecretVolume: Watch picks up a Kubernetes Secret
// update, where only the ..data symlink changes and the files' own names
// see no event.
func TestCertificateReloadSecretVolume(t *testing.T) {
	ca := newTestCA(t, "ca")
	vol := &secretVolume{dir: t.TempDir()}
	cert, key := ca.issue(t, "sidecar-1", true)
	vol.update(t, map[string][]byte{"tls.crt": cert, "tls.key": key})
	certs, err := frontdoor.NewCertStore(config.ServerTLS{Enabled: true, CertFile: filepath.Join(vol.dir, "tls.crt"), KeyFile: filepath.Join(vol.dir, "tls.key")}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go certs.Watch(ctx)
	s, _ := sidecartest.StartRecorded(t, server.Config{TLS: certs})
	cfg := clientTLS(t, ca, nil)
	time.Sleep(2 * frontdoor.TLSDebounce) // Watch has added the directory

	cert, key = ca.issue(t, "sidecar-2", true)
	vol.update(t, map[string][]byte{"tls.crt": cert, "tls.key": key})
	block, _ := pem.Decode(cert)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sidecartest.WaitFor(t, 5*time.Second, "the Secret's new certificate", func() bool {
		return servedCert(t, s.HTTPAddr().String(), cfg) == leaf.SerialNumber.String()
	})
}

// TestMetricsPlainUnlessAsked: with TLS on the client listeners and
// server.tls.metrics off, the metrics listener serves plain HTTP (a
// Prometheus that scrapes it as before keeps working).
func TestMetricsPlainUnlessAsked(t *testing.T) {
	ca := newTestCA(t, "ca")
	certs, err := frontdoor.NewCertStore(tlsFiles(t, t.TempDir(), ca, nil), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := metrics.New()
	s, _ := sidecartest.StartRecorded(t, server.Config{TLS: certs, MetricsListen: "127.0.0.1:0", MetricsHandler: m.Handler()})
	resp, err := http.Get("http://" + s.MetricsAddr().String() + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("metrics over plain HTTP: %v %v", resp, err)
	}
	resp.Body.Close()
	if got := servedCert(t, s.HTTPAddr().String(), clientTLS(t, ca, nil)); strings.HasPrefix(got, "error") {
		t.Errorf("the HTTP listener over TLS: %s", got)
	}
}
