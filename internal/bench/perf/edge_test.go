package perf

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestEdgeRules: the edge blocks a source while its count over the window,
// blocked requests included, is over the limit, and never another source;
// the stage throttle answers 429 once its bucket is empty, for everyone.
func TestEdgeRules(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer origin.Close()
	e, err := startEdge(origin.URL+"/callback", nil, 3, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	send := func(source string) int {
		req, _ := http.NewRequest(http.MethodPost, e.URL, nil)
		req.Header.Set(sourceHeader, source)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode == http.StatusForbidden && res.Header.Get(edgeBlockHeader) == "" {
			t.Fatal("a 403 without the edge's mark")
		}
		return res.StatusCode
	}
	for i := range 5 {
		want := http.StatusOK
		if i >= 3 {
			want = http.StatusForbidden
		}
		if got := send(floodSource); got != want {
			t.Errorf("flood request %d: %d, want %d", i+1, got, want)
		}
	}
	if got := send(legitSource); got != http.StatusOK {
		t.Errorf("another source: %d, want 200", got)
	}

	h := stageThrottle(1, 2)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	codes := []int{}
	for range 3 {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/", nil))
		codes = append(codes, rec.Code)
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != http.StatusTooManyRequests {
		t.Errorf("stage throttle of burst 2: %v, want 200 200 429", codes)
	}
}

// TestOriginRequiresTheClientCertificate: the API custom domain's regional
// endpoint, as the bench models mutual TLS, forwards what the edge sends
// with its client certificate and refuses in the TLS handshake a caller
// with none or with one of another authority, before anything behind it
// sees a request.
func TestOriginRequiresTheClientCertificate(t *testing.T) {
	var reached atomic.Int64
	behind := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	defer behind.Close()
	o, err := startOrigin(behind.URL + "/callback")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	other, err := newAuthority("another CA")
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.issue("stranger", x509.ExtKeyUsageClientAuth)
	if err != nil {
		t.Fatal(err)
	}
	withForeign := o.Stranger.Clone()
	withForeign.Certificates = []tls.Certificate{foreign}
	send := func(c *tls.Config) error {
		client := &http.Client{Transport: &http.Transport{TLSClientConfig: c}}
		defer client.CloseIdleConnections()
		res, err := client.Post(o.URL, "application/json", strings.NewReader("{}"))
		if err != nil {
			return err
		}
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			t.Errorf("through the front: %d", res.StatusCode)
		}
		return nil
	}
	if err := send(o.Client); err != nil || reached.Load() != 1 {
		t.Fatalf("the edge's certificate: %v, %d requests behind, want 1", err, reached.Load())
	}
	for name, c := range map[string]*tls.Config{"no certificate": o.Stranger, "another authority's": withForeign} {
		if err := send(c); !refusedInHandshake(err) {
			t.Errorf("%s: %v, want refused in the TLS handshake", name, err)
		}
	}
	if n := reached.Load(); n != 1 {
		t.Errorf("%d requests reached what is behind the front, want only the edge's", n)
	}
}
