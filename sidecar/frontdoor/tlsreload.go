package frontdoor

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/mergectl/react-triton/sidecar/config"
	"github.com/mergectl/react-triton/sidecar/metrics"
)

// CertStore holds the TLS certificate of the sidecar's listeners, its key
// and the CA pool that client certificates must chain to (mutual TLS),
// read from files. Every handshake takes what the store holds then, so a
// Reload (on SIGHUP, or when Watch sees a file change) applies to the next
// connection without a restart, and connections open meanwhile are not
// disturbed. A Reload that fails (a key that does not match, a file half
// written) keeps the previous certificate serving.
type CertStore struct {
	certFile, keyFile, caFile string
	log                       *slog.Logger
	metrics                   *metrics.Metrics // may be nil

	mu  sync.Mutex // one Reload at a time
	cur atomic.Pointer[certBundle]
}

// certBundle is one successful load of the files.
type certBundle struct {
	cert     tls.Certificate
	clients  *x509.CertPool // nil: no client certificate asked
	notAfter time.Time
}

// NewCertStore loads the files of c (TLS enabled); log and m may be nil.
func NewCertStore(c config.ServerTLS, log *slog.Logger, m *metrics.Metrics) (*CertStore, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &CertStore{certFile: c.CertFile, keyFile: c.KeyFile, caFile: c.ClientCAFile, log: log, metrics: m}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the files again and, if they load, serves them from the
// next handshake on.
func (s *CertStore) Reload() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := s.load()
	if s.metrics != nil {
		var notAfter time.Time
		if b != nil {
			notAfter = b.notAfter
		}
		s.metrics.TLSLoaded(notAfter, err)
	}
	if err != nil {
		return err
	}
	s.cur.Store(b)
	return nil
}

// load reads and checks the files.
func (s *CertStore) load() (*certBundle, error) {
	cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		return nil, fmt.Errorf("server.tls: certificate %s and key %s: %w", s.certFile, s.keyFile, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("server.tls: certificate %s: %w", s.certFile, err)
	}
	cert.Leaf = leaf
	b := &certBundle{cert: cert, notAfter: leaf.NotAfter}
	if s.caFile != "" {
		pem, err := os.ReadFile(s.caFile)
		if err != nil {
			return nil, fmt.Errorf("server.tls.client_ca_file: %w", err)
		}
		b.clients = x509.NewCertPool()
		if !b.clients.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("server.tls.client_ca_file: %s holds no PEM certificate", s.caFile)
		}
	}
	return b, nil
}

// NotAfter returns when the certificate in service expires.
func (s *CertStore) NotAfter() time.Time { return s.cur.Load().notAfter }

// ServerConfig returns the TLS configuration of a listener that speaks the
// given ALPN protocols ("h2" for gRPC, "http/1.1" for HTTP). Each
// handshake reads the store's current certificate and, when clientAuth is
// true and a client CA is configured, requires a client certificate that
// chains to it.
func (s *CertStore) ServerConfig(nextProtos []string, clientAuth bool) *tls.Config {
	build := func() *tls.Config {
		b := s.cur.Load()
		c := &tls.Config{
			MinVersion:   tls.VersionTLS12,
			NextProtos:   nextProtos,
			Certificates: []tls.Certificate{b.cert},
		}
		if clientAuth && b.clients != nil {
			c.ClientAuth = tls.RequireAndVerifyClientCert
			c.ClientCAs = b.clients
		}
		return c
	}
	base := build()
	base.Certificates = nil
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) { return build(), nil }
	// Never used (GetConfigForClient answers every handshake), but a
	// tls.Config with no certificate at all is refused by some callers.
	base.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) { b := s.cur.Load(); return &b.cert, nil }
	return base
}

// files returns the files the store reads.
func (s *CertStore) files() []string {
	out := []string{s.certFile, s.keyFile}
	if s.caFile != "" {
		out = append(out, s.caFile)
	}
	return out
}

// tlsDebounce is how long Watch waits after a file event for more, so
// that a certificate and its key written one after the other load once.
const tlsDebounce = 250 * time.Millisecond

// Watch reloads the store whenever one of its files changes, until ctx is
// done. It watches the files' directories, so that it sees a file replaced
// by a rename and a Kubernetes Secret update (the ..data symlink swap). A
// reload that fails is logged, and the next change tries again.
func (s *CertStore) Watch(ctx context.Context) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		s.log.Warn("TLS certificate reload on file change disabled; SIGHUP still reloads it", "error", err)
		return
	}
	defer w.Close()
	dirs := map[string]bool{}
	bases := map[string]bool{}
	for _, f := range s.files() {
		dirs[filepath.Dir(f)] = true
		bases[filepath.Base(f)] = true
	}
	for d := range dirs {
		if err := w.Add(d); err != nil {
			s.log.Warn("cannot watch the TLS files for changes; SIGHUP still reloads them", "dir", d, "error", err)
		}
	}
	var debounce <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			base := filepath.Base(ev.Name)
			if bases[base] || strings.HasPrefix(base, "..") {
				debounce = time.After(tlsDebounce)
			}
		case err, ok := <-w.Errors:
			if !ok {
				return
			}
			s.log.Warn("watching the TLS files", "error", err)
		case <-debounce:
			debounce = nil
			s.ReloadAndLog("a TLS file changed")
			// A directory replaced as a whole is watched anew.
			for d := range dirs {
				w.Add(d)
			}
		}
	}
}

// ReloadAndLog reloads the store and logs the outcome.
func (s *CertStore) ReloadAndLog(why string) {
	old := s.cur.Load()
	if err := s.Reload(); err != nil {
		s.log.Error("TLS certificate reload failed; the previous certificate keeps serving", "why", why, "error", err)
		return
	}
	cur := s.cur.Load()
	if old != nil && sameCert(old.cert, cur.cert) && old.clients.Equal(cur.clients) {
		return
	}
	s.log.Info("TLS certificate reloaded", "why", why, "subject", cur.cert.Leaf.Subject.String(), "not_after", cur.notAfter.UTC().Format(time.RFC3339))
}

// sameCert reports whether two certificates have the same chain.
func sameCert(a, b tls.Certificate) bool {
	if len(a.Certificate) != len(b.Certificate) {
		return false
	}
	for i := range a.Certificate {
		if string(a.Certificate[i]) != string(b.Certificate[i]) {
			return false
		}
	}
	return true
}
