package engine

// SetSharing turns the sharing of contexts and request prefixes between steps and requests on
// or off (share.go), and returns what restores it.
func SetSharing(on bool) (restore func()) {
	was := noSharing.Swap(!on)
	return func() { noSharing.Store(was) }
}

// CheckAnswers makes answerReserve check the answer sizes it keeps against a full count (it
// panics when they differ), and returns what restores it.
func CheckAnswers(on bool) (restore func()) {
	was := checkAnswers.Swap(on)
	return func() { checkAnswers.Store(was) }
}
