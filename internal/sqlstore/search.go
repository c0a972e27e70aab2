package sqlstore

import "github.com/hippocam/hippocam"

// Search in the SQL stores: each keeps a full-text index of the searchable text of original
// messages (hippocam.Searchable, hippocam.SearchText), written by the commit that inserts the
// message and removed with its session, and answers a query from the index in its own SQL. What
// they share is the reading of the query and the shape of a hit.

// ParseSearch checks a search's query and limit. EINVALID for a query with no word to search
// for (or too many) and for a limit below 1.
func ParseSearch(query string, limit int) (hippocam.SearchQuery, error) {
	q, err := hippocam.ParseSearchQuery(query)
	if err != nil {
		return q, err
	}
	if limit < 1 {
		return q, hippocam.Errorf(hippocam.EINVALID, "search: the limit is %d; ask for at least one hit", limit)
	}
	return q, nil
}

// HitColumns are the columns a search reads for each hit: the layer the message sits in (its
// parent), then MessageColumns.
const HitColumns = `parent, ` + MessageColumns

// ScanHit reads a row of HitColumns as a hit of q, with its snippet (none for a query without
// phrases, for a caller that makes it later).
func ScanHit[T Text](row Row, q hippocam.SearchQuery) (hippocam.SearchHit, error) {
	var h hippocam.SearchHit
	m, err := ScanMessage[T](parentRow{row, &h.Ref})
	if err != nil {
		return h, err
	}
	h.Message = m
	if len(q.Phrases) > 0 {
		h.Snippet = q.Snippet(hippocam.SearchText(&m))
	}
	return h, nil
}

// parentRow scans the parent column into parent ahead of the columns its caller asks for.
type parentRow struct {
	row    Row
	parent *string
}

func (r parentRow) Scan(dest ...any) error {
	return r.row.Scan(append([]any{r.parent}, dest...)...)
}
