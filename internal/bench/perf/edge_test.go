package perf

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestEdgeRules: the edge blocks a source while its count over the window,
// blocked requests included, is over the limit, and never another source;
// the stage throttle answers 429 once its bucket is empty, for everyone.
func TestEdgeRules(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer origin.Close()
	e, err := startEdge(origin.URL+"/callback", 3, time.Hour)
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
