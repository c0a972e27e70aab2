package sqlite_test

import (
	"testing"

	"github.com/hippocam/hippocam/storetest"
)

// BenchmarkRecall runs storetest.BenchRecall: Children of a random ref in a 100,000-message archive.
func BenchmarkRecall(b *testing.B) { storetest.BenchRecall(b, MustOpenDB(b)) }

// BenchmarkCommitAppend runs storetest.BenchCommitAppend: a one-message commit to a 10,000-message context.
func BenchmarkCommitAppend(b *testing.B) { storetest.BenchCommitAppend(b, MustOpenDB(b)) }
