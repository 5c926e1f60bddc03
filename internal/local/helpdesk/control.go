package helpdesk

import (
	"encoding/json"
	"io"
	"net/http"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
)

// MaxControlBytes bounds a control request's body.
const MaxControlBytes = 16 << 10

// capabilitiesJSON is delivery.Capabilities over HTTP, durations as Go
// duration strings. In a PUT, a member left out keeps its value.
type capabilitiesJSON struct {
	DedupWindow *string `json:"dedup_window,omitempty"`
	Lookup      *bool   `json:"lookup,omitempty"`
	SettleDelay *string `json:"settle_delay,omitempty"`
	// ReplaysErrors: a key whose create got an error gets it again.
	ReplaysErrors *bool `json:"replays_errors,omitempty"`
}

func capsJSON(c delivery.Capabilities) capabilitiesJSON {
	w, d := c.DedupWindow.String(), c.SettleDelay.String()
	return capabilitiesJSON{DedupWindow: &w, Lookup: &c.Lookup, SettleDelay: &d, ReplaysErrors: &c.ReplaysErrors}
}

// controlRoutes serves the control API under ControlPath:
//
//	GET    /_helpdesk/                 what is served here
//	GET    /_helpdesk/tickets          every ticket held
//	GET    /_helpdesk/counts           request and creation counts
//	GET    /_helpdesk/keys             create requests per idempotency key
//	GET    /_helpdesk/capabilities     the capabilities
//	PUT    /_helpdesk/capabilities     change them (members left out stay)
//	GET    /_helpdesk/faults           faults still queued
//	POST   /_helpdesk/faults           queue a fault (refuse: at once)
//	DELETE /_helpdesk/faults           drop every queued fault, end a refusal
//	POST   /_helpdesk/reset            forget tickets, keys, counts and faults;
//	                                   end a refusal; capabilities as at start
//
// It is served on the main address and, with Options.ControlAddr, on that
// address alone too, which a refuse fault leaves open.
func (s *Server) controlRoutes(mux *http.ServeMux) {
	p := ControlPath
	mux.HandleFunc("GET "+p+"/{$}", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{
			"webhook_url": s.WebhookURL(), "zendesk_url": s.URL(), "control_url": s.ControlURL(), "refusing": s.Refusing(),
			"control": []string{
				"GET " + p + "/tickets", "GET " + p + "/counts", "GET " + p + "/keys",
				"GET|PUT " + p + "/capabilities", "GET|POST|DELETE " + p + "/faults", "POST " + p + "/reset",
			},
			"fault_kinds": []FaultKind{LoseAnswer, FailBefore, FailAfter, RateLimit, Slow, Late, ResetBefore, Refuse, IgnoreFilter},
		})
	})
	mux.HandleFunc("GET "+p+"/tickets", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"tickets": s.Tickets()})
	})
	mux.HandleFunc("GET "+p+"/counts", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Counts())
	})
	mux.HandleFunc("GET "+p+"/keys", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.KeyRequests())
	})
	mux.HandleFunc("GET "+p+"/capabilities", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, capsJSON(s.Capabilities()))
	})
	mux.HandleFunc("PUT "+p+"/capabilities", s.putCapabilities)
	mux.HandleFunc("GET "+p+"/faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"faults": s.Faults()})
	})
	mux.HandleFunc("POST "+p+"/faults", func(w http.ResponseWriter, r *http.Request) {
		var f Fault
		if !readControl(w, r, &f) {
			return
		}
		if err := s.Inject(f); err != nil {
			controlError(w, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"faults": s.Faults()})
	})
	mux.HandleFunc("DELETE "+p+"/faults", func(w http.ResponseWriter, _ *http.Request) {
		s.ClearFaults()
		writeJSON(w, http.StatusOK, map[string]any{"faults": []Fault{}})
	})
	mux.HandleFunc("POST "+p+"/reset", func(w http.ResponseWriter, _ *http.Request) {
		s.Reset()
		writeJSON(w, http.StatusOK, s.Counts())
	})
}

func (s *Server) putCapabilities(w http.ResponseWriter, r *http.Request) {
	var in capabilitiesJSON
	if !readControl(w, r, &in) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.caps
	for _, d := range []struct {
		v   *string
		dst *time.Duration
	}{{in.DedupWindow, &c.DedupWindow}, {in.SettleDelay, &c.SettleDelay}} {
		if d.v == nil {
			continue
		}
		v, err := time.ParseDuration(*d.v)
		if err != nil {
			controlError(w, "dedup_window and settle_delay are Go durations such as \"2h\" or \"0s\"")
			return
		}
		*d.dst = v
	}
	if in.Lookup != nil {
		c.Lookup = *in.Lookup
	}
	if in.ReplaysErrors != nil {
		c.ReplaysErrors = *in.ReplaysErrors
	}
	if err := checkCapabilities(c); err != nil {
		controlError(w, err.Error())
		return
	}
	s.caps = c
	writeJSON(w, http.StatusOK, capsJSON(c))
}

// readControl decodes a control request's JSON body into v, answering 400
// when it cannot.
func readControl(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxControlBytes))
	if err == nil {
		err = json.Unmarshal(body, v)
	}
	if err != nil {
		controlError(w, "the body must be a JSON object: "+err.Error())
		return false
	}
	return true
}

func controlError(w http.ResponseWriter, msg string) {
	writeJSON(w, http.StatusBadRequest, map[string]string{"error": "bad_request", "message": msg})
}
