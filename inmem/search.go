package inmem

import (
	"cmp"
	"context"
	"slices"

	"github.com/hippocam/hippocam"
)

// Search reads every original message of the session and keeps those that hold each phrase of
// the query (hippocam.SearchQuery.Matches), the last to enter first. EINVALID for a query with
// no word to search for, or a limit below 1; ENOTFOUND if the session does not exist.
func (st *Store) Search(ctx context.Context, tenant, sessionID, query string, limit int) ([]hippocam.SearchHit, error) {
	q, err := hippocam.ParseSearchQuery(query)
	if err != nil {
		return nil, err
	}
	if limit < 1 {
		return nil, hippocam.Errorf(hippocam.EINVALID, "search: the limit is %d; ask for at least one hit", limit)
	}
	st.mu.RLock()
	defer st.mu.RUnlock()
	ss, ok := st.sessions[key{tenant, sessionID}]
	if !ok {
		return nil, notFound(sessionID)
	}
	var found []string
	for id, m := range ss.messages {
		if hippocam.Searchable(&m) && q.Matches(hippocam.SearchText(&m)) {
			found = append(found, id)
		}
	}
	slices.SortFunc(found, func(a, b string) int { return cmp.Compare(ss.entered[b], ss.entered[a]) })
	found = found[:min(len(found), limit)]
	parent := map[string]string{}
	for ref, kids := range ss.children {
		for _, id := range kids {
			parent[id] = ref
		}
	}
	hits := make([]hippocam.SearchHit, len(found))
	for i, id := range found {
		m := cloneMessage(ss.messages[id])
		hits[i] = hippocam.SearchHit{Message: m, Ref: parent[id], Snippet: q.Snippet(hippocam.SearchText(&m))}
	}
	return hits, nil
}
