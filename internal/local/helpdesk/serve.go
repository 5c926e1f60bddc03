package helpdesk

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers.
const (
	// KeyHeader carries the idempotency key of a create.
	KeyHeader = "Idempotency-Key"
	// LookupHeader says, on the answer to a create that carried a key to a
	// deduplicating helpdesk, whether the key was remembered ("hit": the
	// earlier ticket is returned) or not ("miss"), as Zendesk does.
	LookupHeader = "X-Idempotency-Lookup"
)

// front is one API shape the helpdesk speaks.
type front struct {
	via  string
	auth func(*http.Request) bool
	// decode reads a create's body: the ticket and a fingerprint of the
	// payload, or the status and message of a refusal.
	decode func(body []byte) (t *Ticket, fingerprint string, status int, msg string)
	// created answers a create (or its replay) with the ticket.
	created func(w http.ResponseWriter, base string, t Ticket)
	// conflict answers a remembered key sent with another payload.
	conflict func(w http.ResponseWriter)
	list     func(w http.ResponseWriter, base string, ts []Ticket)
	show     func(w http.ResponseWriter, base string, t Ticket)
	// fail answers status with the front's error shape.
	fail func(w http.ResponseWriter, status int, code, msg string)
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	wh, zd := s.webhookFront(), s.zendeskFront()
	mux.Handle("POST "+WebhookPath, s.createHandler(wh))
	mux.Handle("GET "+WebhookPath, s.lookupHandler(wh))
	mux.Handle("GET "+WebhookPath+"/{id}", s.showHandler(wh))
	for _, p := range []string{ZendeskPath, ZendeskPath + ".json"} {
		mux.Handle("POST "+p, s.createHandler(zd))
		mux.Handle("GET "+p, s.lookupHandler(zd))
	}
	mux.Handle("GET "+ZendeskPath+"/{id}", s.showHandler(zd))
	mux.Handle("GET "+AgentPath+"/{id}", http.HandlerFunc(s.agentView))
	s.controlRoutes(mux)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found",
			"message": "this helpdesk serves " + WebhookPath + ", " + ZendeskPath + " and " + ControlPath + "/"})
	})
	return mux
}

func (s *Server) createHandler(f *front) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.enter() {
			return
		}
		defer s.handlers.Done()
		key := r.Header.Get(KeyHeader)
		body, readErr := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		s.mu.Lock()
		s.st.counts.CreateRequests++
		if key != "" {
			s.st.keyRequests[key]++
		}
		s.mu.Unlock()
		if !s.admit(w, r, f, Create, readErr) {
			return
		}
		if len(key) > MaxKeyLength {
			s.answerFail(w, f, Create, http.StatusBadRequest, "invalid_idempotency_key", "the Idempotency-Key is longer than 255 characters")
			return
		}
		s.mu.Lock()
		kept, replayErr := s.keptError(key)
		s.mu.Unlock()
		if replayErr {
			s.logf("request", "front", f.via, "op", Create, "status", kept.Status, "outcome", "error_replay")
			s.faultAnswer(w, f, Create, kept)
			return
		}
		s.mu.Lock()
		fault, faulty := s.next(Create)
		s.mu.Unlock()
		if faulty && fault.Kind == Late {
			s.logf("request", "front", f.via, "op", Create, "fault", fault.Kind, "delay", fault.Delay.String())
			s.hold(fault.Delay)
			faulty = false // then made as any create, its client there or not
		}
		if faulty && s.before(w, f, Create, fault) {
			if fault.Kind == FailBefore {
				s.mu.Lock()
				s.keepError(key, fault)
				s.mu.Unlock()
			}
			return
		}
		t, fp, status, msg := f.decode(body)
		if status != 0 {
			s.answerFail(w, f, Create, status, "invalid_ticket", msg)
			return
		}
		t.Via = f.via
		s.mu.Lock()
		made, replay, conflict := s.create(t, key, fp)
		dedup := key != "" && s.caps.DedupWindow > 0
		var v Ticket
		if made != nil {
			v = s.view(made)
		}
		s.mu.Unlock()
		if conflict {
			s.logf("request", "front", f.via, "op", Create, "status", http.StatusBadRequest, "outcome", "key_conflict")
			f.conflict(w)
			return
		}
		if faulty && fault.Kind == FailAfter && !replay {
			s.mu.Lock()
			s.keepError(key, fault)
			s.mu.Unlock()
		}
		if faulty && s.after(w, r, f, Create, fault) {
			return
		}
		if dedup {
			w.Header().Set(LookupHeader, map[bool]string{true: "hit", false: "miss"}[replay])
		}
		s.logf("request", "front", f.via, "op", Create, "status", http.StatusCreated, "ticket", v.ID, "replay", replay)
		f.created(w, s.URL(), v)
	})
}

func (s *Server) lookupHandler(f *front) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.enter() {
			return
		}
		defer s.handlers.Done()
		s.mu.Lock()
		s.st.counts.LookupRequests++
		s.mu.Unlock()
		if !s.admit(w, r, f, Lookup, nil) {
			return
		}
		s.mu.Lock()
		fault, faulty := s.next(Lookup)
		s.mu.Unlock()
		if faulty && s.before(w, f, Lookup, fault) {
			return
		}
		s.mu.Lock()
		enabled := s.caps.Lookup
		var found []Ticket
		filter := r.URL.Query().Get("external_id")
		if faulty && fault.Kind == IgnoreFilter {
			filter = ""
		}
		for _, t := range s.visible(filter) {
			found = append(found, s.view(t))
		}
		s.mu.Unlock()
		if !enabled {
			s.answerFail(w, f, Lookup, http.StatusNotFound, "lookup_unsupported", "this helpdesk does not look tickets up")
			return
		}
		if faulty && s.after(w, r, f, Lookup, fault) {
			return
		}
		s.logf("request", "front", f.via, "op", Lookup, "status", http.StatusOK, "found", len(found))
		f.list(w, s.URL(), found)
	})
}

func (s *Server) showHandler(f *front) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !f.auth(r) {
			f.fail(w, http.StatusUnauthorized, "unauthorized", "credentials missing or wrong")
			return
		}
		id, err := strconv.ParseInt(strings.TrimSuffix(r.PathValue("id"), ".json"), 10, 64)
		t, ok := s.Ticket(id)
		if err != nil || !ok {
			f.fail(w, http.StatusNotFound, "not_found", "no such ticket")
			return
		}
		f.show(w, s.URL(), t)
	})
}

// admit checks the body was read and the credentials, answering when not.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, f *front, op Op, readErr error) bool {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(readErr, &tooLarge):
		s.answerFail(w, f, op, http.StatusRequestEntityTooLarge, "too_large", "the request body is too large")
		return false
	case readErr != nil:
		s.answerFail(w, f, op, http.StatusBadRequest, "unreadable", "the request body could not be read")
		return false
	case !f.auth(r):
		s.mu.Lock()
		s.st.counts.Unauthorized++
		s.mu.Unlock()
		s.answerFail(w, f, op, http.StatusUnauthorized, "unauthorized", "credentials missing or wrong")
		return false
	}
	return true
}

func (s *Server) answerFail(w http.ResponseWriter, f *front, op Op, status int, code, msg string) {
	s.logf("request", "front", f.via, "op", op, "status", status, "outcome", code)
	f.fail(w, status, code, msg)
}

// before applies the faults that answer instead of the helpdesk: true
// when the request is answered (or dropped).
func (s *Server) before(w http.ResponseWriter, f *front, op Op, fault Fault) bool {
	switch fault.Kind {
	case FailBefore, RateLimit:
		s.faultAnswer(w, f, op, fault)
	case ResetBefore:
		s.logf("request", "front", f.via, "op", op, "fault", fault.Kind)
		drop(w, true)
	default:
		return false
	}
	return true
}

// hold waits d whatever the client does, as a front holding a request
// does; a server closing meanwhile drops the request unanswered.
func (s *Server) hold(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.closing:
		panic(http.ErrAbortHandler)
	}
}

// after applies the faults that follow the helpdesk's work: true when the
// request is answered (or dropped). Slow waits, then lets the answer go.
func (s *Server) after(w http.ResponseWriter, r *http.Request, f *front, op Op, fault Fault) bool {
	switch fault.Kind {
	case FailAfter:
		s.faultAnswer(w, f, op, fault)
	case LoseAnswer:
		s.logf("request", "front", f.via, "op", op, "fault", fault.Kind)
		drop(w, false)
	case Slow:
		s.logf("request", "front", f.via, "op", op, "fault", fault.Kind, "delay", fault.Delay.String())
		t := time.NewTimer(fault.Delay)
		defer t.Stop()
		select {
		case <-t.C:
			return false
		case <-r.Context().Done(): // the client gave up
		case <-s.closing:
			panic(http.ErrAbortHandler) // the server drops the connection, unanswered
		}
	default:
		return false
	}
	return true
}

func (s *Server) faultAnswer(w http.ResponseWriter, f *front, op Op, fault Fault) {
	s.logf("request", "front", f.via, "op", op, "status", fault.Status, "fault", fault.Kind)
	writeFault(w, fault, func(w http.ResponseWriter) {
		f.fail(w, fault.Status, "injected_fault", "fault "+string(fault.Kind)+" injected into the local helpdesk")
	})
}

// writeFault answers with fault's status, its Retry-After when set, and
// its body, or without one as fail answers.
func writeFault(w http.ResponseWriter, fault Fault, fail func(http.ResponseWriter)) {
	if fault.RetryAfter != "" {
		w.Header().Set("Retry-After", fault.RetryAfter)
	}
	if fault.Body != "" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(fault.Status)
		_, _ = io.WriteString(w, fault.Body)
		return
	}
	fail(w)
}

// drop takes the connection over and closes it without an answer: with a
// TCP reset when reset is true, else with an orderly close (the client
// reads the end of the stream where the answer should be).
func drop(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // the server drops the connection itself
	}
	if tc, ok := conn.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// agentView is the page a person opens: the ticket as text.
func (s *Server) agentView(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	t, ok := s.Ticket(id)
	if err != nil || !ok {
		http.Error(w, "no such ticket", http.StatusNotFound)
		return
	}
	var b bytes.Buffer
	b.WriteString("Ticket #" + strconv.FormatInt(t.ID, 10) + " (via " + t.Via + ")\n")
	for _, kv := range [][2]string{{"Title", t.Title}, {"Priority", t.Priority}, {"Tags", strings.Join(t.Tags, ", ")},
		{"Tenant", t.Tenant}, {"Requester", t.Requester}, {"External id", t.ExternalID},
		{"Idempotency key", t.IdempotencyKey}, {"Received", t.ReceivedAt.UTC().Format(time.RFC3339Nano)}} {
		if kv[1] != "" {
			b.WriteString(kv[0] + ": " + kv[1] + "\n")
		}
	}
	if t.Description != "" {
		b.WriteString("\n" + t.Description + "\n")
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// fingerprint is a canonical form of a JSON document: equal for payloads
// that differ only in member order or spacing.
func fingerprint(v any) string {
	b, _ := json.Marshal(v) // a decoded document always encodes
	return string(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
