// Package logtest provides Buffer, a bytes.Buffer that a writer and a reader
// may use at once: tests and tools capture logs and process output in it
// while the code that writes them is still running.
package logtest

import (
	"bytes"
	"sync"
)

// Buffer is safe for concurrent Write and String calls. The zero value is
// empty and ready to use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
