package triton

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"

	"github.com/mergectl/react-triton/triton/internal/tritontest"
	"github.com/mergectl/react-triton/triton/tritonpb"
)

// testPKI is a throw-away certificate authority with a server and a client
// certificate it signed, written as PEM files.
type testPKI struct {
	dir                         string
	caFile                      string
	serverCert                  tls.Certificate
	clientCertFile, clientKey   string
	pool                        *x509.CertPool
	rogueCertFile, rogueKeyFile string // a client certificate from another CA
}

// serverName is the DNS name in the test server's certificate.
const serverName = "triton.test"

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	p := &testPKI{dir: t.TempDir(), pool: x509.NewCertPool()}
	ca, caKey := newCA(t, "react-triton test CA")
	p.pool.AddCert(ca)
	p.caFile = writePEM(t, p.dir, "ca.pem", "CERTIFICATE", ca.Raw)

	serverDER, serverKey := issue(t, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: serverName},
		DNSNames:    []string{serverName},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	p.serverCert = tls.Certificate{Certificate: [][]byte{serverDER}, PrivateKey: serverKey}

	clientDER, clientKey := issue(t, ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "react-sidecar"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	p.clientCertFile = writePEM(t, p.dir, "client.pem", "CERTIFICATE", clientDER)
	p.clientKey = writeKey(t, p.dir, "client-key.pem", clientKey)

	rogueCA, rogueCAKey := newCA(t, "another CA")
	rogueDER, rogueKey := issue(t, rogueCA, rogueCAKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "intruder"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	p.rogueCertFile = writePEM(t, p.dir, "rogue.pem", "CERTIFICATE", rogueDER)
	p.rogueKeyFile = writeKey(t, p.dir, "rogue-key.pem", rogueKey)
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

var serial int64

func template(tmpl *x509.Certificate) *x509.Certificate {
	serial++
	tmpl.SerialNumber = big.NewInt(serial)
	tmpl.NotBefore = time.Now().Add(-time.Hour)
	tmpl.NotAfter = time.Now().Add(time.Hour)
	return tmpl
}

func newCA(t *testing.T, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key := newKey(t)
	tmpl := template(&x509.Certificate{
		Subject:               pkix.Name{CommonName: name},
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	})
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

func issue(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate) ([]byte, *ecdsa.PrivateKey) {
	t.Helper()
	key := newKey(t)
	tmpl = template(tmpl)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return der, key
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func writeKey(t *testing.T, dir, name string, key *ecdsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, dir, name, "PRIVATE KEY", der)
}

// startTLSFake serves a tritontest.Server with TLS on a loopback TCP port, asking
// for a client certificate signed by the test CA when mutual is true, and
// returns its address.
func startTLSFake(t *testing.T, p *testPKI, mutual bool) string {
	t.Helper()
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{p.serverCert}}
	if mutual {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = p.pool
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)))
	tritonpb.RegisterGRPCInferenceServiceServer(srv, &tritontest.Server{})
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// TestDialTLS connects to a TLS server on a real loopback socket: with the
// CA and the server name in its certificate, with a wrong server name, and
// with and without a client certificate when the server requires one.
func TestDialTLS(t *testing.T) {
	p := newTestPKI(t)
	plain := startTLSFake(t, p, false)
	mutual := startTLSFake(t, p, true)
	for _, tt := range []struct {
		name  string
		addr  string
		files TLSFiles
		ok    bool
	}{
		{"server auth", plain, TLSFiles{CAFile: p.caFile, ServerName: serverName}, true},
		{"wrong server name", plain, TLSFiles{CAFile: p.caFile, ServerName: "other.test"}, false},
		{"server name defaults to the address", plain, TLSFiles{CAFile: p.caFile}, false},
		{"unknown CA", plain, TLSFiles{ServerName: serverName}, false},
		{"mutual TLS", mutual, TLSFiles{CAFile: p.caFile, ServerName: serverName, CertFile: p.clientCertFile, KeyFile: p.clientKey}, true},
		{"mutual TLS without a client certificate", mutual, TLSFiles{CAFile: p.caFile, ServerName: serverName}, false},
		{"mutual TLS with a certificate from another CA", mutual, TLSFiles{CAFile: p.caFile, ServerName: serverName, CertFile: p.rogueCertFile, KeyFile: p.rogueKeyFile}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Dial(context.Background(), tt.addr, WithTLS(tt.files), WithTimeout(2*time.Second), WithRetry(1, time.Millisecond, time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			live, err := c.ServerLive(context.Background())
			if tt.ok {
				if err != nil || !live {
					t.Fatalf("ServerLive = %v, %v", live, err)
				}
				x := []float32{1, 2, 3, 4}
				resp, err := c.Infer(context.Background(), &InferRequest{Model: "affine_fp32", Inputs: []Tensor{NewFP32("INPUT0", []int64{1, 4}, x)}})
				if err != nil {
					t.Fatal(err)
				}
				out, _ := resp.Output("OUTPUT0")
				if y, err := out.FP32(); err != nil || y[3] != 9 {
					t.Errorf("Infer over TLS = %v, %v", y, err)
				}
				return
			}
			wantCode(t, err, codes.Unavailable, tt.addr)
		})
	}
}
