package engine

// SetSharing turns the sharing of contexts and request prefixes between steps and requests on
// or off (share.go), and returns what restores it.
func SetSharing(on bool) (restore func()) {
	was := noSharing.Swap(!on)
	return func() { noSharing.Store(was) }
}

// CheckKept makes the steps check what they keep from call to call (request prefixes, sizes)
// against what they would work out afresh (they panic when the two differ), and returns what
// restores it.
func CheckKept(on bool) (restore func()) {
	was := checkKept.Swap(on)
	return func() { checkKept.Store(was) }
}
