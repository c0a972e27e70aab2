package sim

// Internals the external tests look at.

// PlainText reports whether no line of s would be read as a directive, fact, detail or
// impression.
func PlainText(s string) bool {
	for _, l := range readLines(s) {
		if l.kind != kindText {
			return false
		}
	}
	return true
}

// EncodedTokens is the number of tokens the prompt cache has encoded so far (memo misses).
func (m *Model) EncodedTokens() int64 { return m.cache.encoded.Load() }

// WithNulls is withNulls: text as a strict model writes it under schema.
var WithNulls = withNulls
