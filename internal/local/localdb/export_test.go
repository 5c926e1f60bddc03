package localdb

// SetTestHookPicked sets testHookPicked until the returned function
// restores it.
func SetTestHookPicked(f func(addr string)) (restore func()) {
	old := testHookPicked
	testHookPicked = f
	return func() { testHookPicked = old }
}
