// Package sqlstore holds what the sqlite and postgres stores do alike, apart from their SQL: the
// rules that turn a Change into inserts and moves of message rows, and the way a session's
// snapshot fields and a message's fields are encoded into columns and read back.
//
// Each store keeps its own SQL and driver code and implements Tx for its transactions; the two
// never import each other, and this package imports only the root package and the standard
// library.
package sqlstore

import "github.com/hippocam/hippocam"

// Text is the Go type a driver takes and gives for a column that holds text or JSON: SQLite
// keeps such columns as TEXT and takes strings (bytes would be stored as a BLOB), while pgx takes
// bytes for json and bytea columns.
type Text interface {
	string | []byte
}

// SessionNotFound returns the ENOTFOUND error for a session id that is not stored.
func SessionNotFound(id string) error {
	return hippocam.Errorf(hippocam.ENOTFOUND, "no session %q", id)
}

// RefNotFound returns the ENOTFOUND error for a ref the session does not have.
func RefNotFound(ref, sessionID string) error {
	return hippocam.Errorf(hippocam.ENOTFOUND, "no ref %q in session %q", ref, sessionID)
}

// MessageNotFound returns the ENOTFOUND error for a message id the session does not have.
func MessageNotFound(id, sessionID string) error {
	return hippocam.Errorf(hippocam.ENOTFOUND, "no message %q in session %q", id, sessionID)
}

// VersionConflict returns the ECONFLICT error for a commit from version from to a session that
// is stored at version.
func VersionConflict(id string, version, from int64) error {
	return hippocam.Errorf(hippocam.ECONFLICT, "session %q is at version %d, not %d", id, version, from)
}

// SessionRecreated returns the ECONFLICT error for a commit to a session that was deleted and
// created again under the same id since the committer loaded it (their UIDs differ).
func SessionRecreated(id string) error {
	return hippocam.Errorf(hippocam.ECONFLICT, "session %q was deleted and created again since it was loaded", id)
}
