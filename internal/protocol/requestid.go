package protocol

// ValidRequestID reports whether s can be a metadata.request_id: 1 to
// MaxRequestIDBytes bytes of visible ASCII, no spaces. Tools that look an
// operation up by its request id check it with the callback's rule.
func ValidRequestID(s string) bool {
	if s == "" || len(s) > MaxRequestIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}
