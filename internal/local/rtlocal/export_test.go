package rtlocal

// SetTestHookListening sets testHookListening until the returned function
// restores it.
func SetTestHookListening(f func(addr string)) (restore func()) {
	old := testHookListening
	testHookListening = f
	return func() { testHookListening = old }
}
