package bench

import (
	"context"
	"crypto/md5"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/postgres"
	"github.com/hippocam/hippocam/sqlite"
	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the "sqlite" driver, for bulk loads into the store's file
)

// RECALL and search latency on large archives: the archive generator, the bulk loaders for
// SQLite and Postgres (which fill the stores' search indexes as commits would), and the
// measurements. (The proxy half of the overhead benchmark is overhead.go.)

// archiveRow is one message of the RECALL session as the stores keep it: its layer (the ref it
// is archived beneath, "" for the context) and position there, and what varies between rows.
// Leaves are raw tool results; memories are intent memories with a ref.
type archiveRow struct {
	id, parent, ref, content string
	pos, tokens              int
}

// columns returns the row's role, kind and tool-call id.
func (a *archiveRow) columns() (role, kind, toolCallID string) {
	if a.ref != "" {
		return string(hippocam.RoleUser), string(hippocam.KindIntentMemory), ""
	}
	return string(hippocam.RoleTool), string(hippocam.KindRaw), "call"
}

// archiveTree describes a generated archive: every ref, the session's last sequence number
// and the length of its context.
type archiveTree struct {
	refs    []string
	seq     int64
	context int
}

// generateArchive produces the messages of a session whose archive holds leaves raw messages
// beneath three levels of memories, each memory holding 10 to 50 children (the shape of
// storetest.BuildArchive); the top level is the context. Rows go to flush in batches, each
// layer in order.
func generateArchive(leaves int, flush func([]archiveRow) error) (archiveTree, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	var tree archiveTree
	next := func(prefix string) string { tree.seq++; return prefix + strconv.FormatInt(tree.seq, 10) }
	batch := make([]archiveRow, 0, recallLoadBatch)
	emit := func(a archiveRow) error {
		if batch = append(batch, a); len(batch) < cap(batch) {
			return nil
		}
		err := flush(batch)
		batch = batch[:0]
		return err
	}
	// group puts n children under fresh memories of 10 to 50 each, calling child for each.
	var level []archiveRow
	group := func(n int, child func(i, pos int, parent string) error) error {
		var up []archiveRow
		for i := 0; i < n; {
			k := min(n-i, 10+rng.IntN(41))
			mem := archiveRow{id: next("m"), ref: next("r"), tokens: 20}
			mem.content = fmt.Sprintf("I did %d things. %s", k, hippocam.RefTag(mem.ref))
			for pos := range k {
				if err := child(i+pos, pos, mem.ref); err != nil {
					return err
				}
			}
			tree.refs = append(tree.refs, mem.ref)
			up, i = append(up, mem), i+k
		}
		level = up
		return nil
	}
	err := group(leaves, func(i, pos int, parent string) error {
		return emit(archiveRow{id: next("m"), parent: parent, pos: pos, content: leafContent(i), tokens: 100})
	})
	for range 2 {
		if err != nil {
			break
		}
		below := level
		err = group(len(below), func(i, pos int, parent string) error {
			below[i].parent, below[i].pos = parent, pos
			return emit(below[i])
		})
	}
	for pos := 0; err == nil && pos < len(level); pos++ {
		level[pos].pos = pos
		err = emit(level[pos])
	}
	if err == nil && len(batch) > 0 {
		err = flush(batch)
	}
	tree.context = len(level)
	return tree, err
}

// leafContent is the text of the i-th archived leaf: recallLeafContent, then a detail under a
// key of its own (k<i>, the kind of thing a question asks for) and a tag that one leaf in
// searchTagEvery carries (t<i mod searchTagEvery>).
func leafContent(i int) string {
	return fmt.Sprintf("%s\ndetail k%d := v%d\ntag t%d", recallLeafContent, i, i*7%1000, i%searchTagEvery)
}

// searchTagEvery is how many leaves share one tag.
const searchTagEvery = 1000

// archiveLoader writes generated rows straight into a store's tables, in the store's own
// schema, far faster than a million appends and folds through Commit. Raw rows also get their
// entry in the store's search index, as a commit gives them.
type archiveLoader interface {
	write(ctx context.Context, rows []archiveRow) error
	// finish records the session's sequence number and context length.
	finish(ctx context.Context, tree archiveTree) error
	// indexBytes is the size of the store's search index.
	indexBytes(ctx context.Context) (int64, error)
}

// measureRecall loads the RECALL session into st through l, times Children of random refs, then
// measures search over the same archive.
func measureRecall(ctx context.Context, name string, st hippocam.Store, l archiveLoader, leaves, samples int, prog *overheadProgress) (OverheadRecall, OverheadSearch, error) {
	row, err := loadAndRecall(ctx, name, st, l, leaves, samples, prog)
	if err != nil {
		return row, OverheadSearch{}, err
	}
	search, err := measureSearch(ctx, name, st, l, leaves, samples, prog)
	return row, search, err
}

// loadAndRecall loads the RECALL session into st through l and times Children of random refs.
func loadAndRecall(ctx context.Context, name string, st hippocam.Store, l archiveLoader, leaves, samples int, prog *overheadProgress) (OverheadRecall, error) {
	row := OverheadRecall{Store: name, Archived: leaves, Samples: samples}
	if err := st.CreateSession(ctx, engine.NewSession("", recallSession, time.Now().UTC())); err != nil {
		return row, err
	}
	t0, written := time.Now(), 0
	stage := "recall " + name + " load"
	tree, err := generateArchive(leaves, func(rows []archiveRow) error {
		before := written
		for i := range rows {
			if rows[i].ref == "" {
				written++
			}
		}
		if written > before {
			prog.report(stage, written, leaves)
		}
		return l.write(ctx, rows)
	})
	if err == nil {
		err = l.finish(ctx, tree)
	}
	if err != nil {
		return row, fmt.Errorf("load: %w", err)
	}
	row.LoadSeconds, row.Refs = roundSeconds(time.Since(t0)), len(tree.refs)
	rng := rand.New(rand.NewPCG(3, 4))
	var lat timings
	children := 0
	for i := -recallWarmup; i < samples; i++ {
		ref := tree.refs[rng.IntN(len(tree.refs))]
		t0 := time.Now()
		kids, err := st.Children(ctx, "", recallSession, ref)
		d := time.Since(t0)
		if err != nil {
			return row, err
		} else if len(kids) == 0 {
			return row, fmt.Errorf("ref %s has no children", ref)
		}
		if i >= 0 {
			lat, children = append(lat, d), children+len(kids)
			if i%100 == 99 || i == samples-1 {
				prog.report("recall "+name, i+1, samples)
			}
		}
	}
	row.P50Ms, row.P99Ms = lat.quantileMs(0.50), lat.quantileMs(0.99)
	row.MeanChildren = math.Round(float64(children)/float64(max(1, samples))*10) / 10
	return row, nil
}

// recallSQLite measures RECALL and search on a SQLite store in a temporary file.
func recallSQLite(ctx context.Context, leaves, samples int, prog *overheadProgress) (OverheadRecall, OverheadSearch, error) {
	dir, err := os.MkdirTemp("", "hippocam-recall-")
	if err != nil {
		return OverheadRecall{}, OverheadSearch{}, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "recall.db")
	db := sqlite.New(path)
	if err := db.Open(ctx); err != nil {
		return OverheadRecall{}, OverheadSearch{}, err
	}
	defer db.Close()
	raw, err := openSQLiteLoader(path)
	if err != nil {
		return OverheadRecall{}, OverheadSearch{}, err
	}
	defer raw.Close()
	return measureRecall(ctx, "sqlite", db, sqliteLoader{raw}, leaves, samples, prog)
}

// openSQLiteLoader opens a write connection of its own to the SQLite store's file at path.
func openSQLiteLoader(path string) (*sql.DB, error) {
	raw, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		return nil, err
	}
	raw.SetMaxOpenConns(1)
	return raw, nil
}

// sqliteLoader writes rows into a SQLite store's file through a connection of its own.
type sqliteLoader struct{ db *sql.DB }

func (l sqliteLoader) write(ctx context.Context, rows []archiveRow) error {
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	ins, err := tx.PrepareContext(ctx, `INSERT INTO messages (tenant, session_id, parent, pos, id, role, kind, content,
		tool_calls, tool_call_id, ref, tokens, knowledge, trace, extra) VALUES ('', ?, ?, ?, ?, ?, ?, ?, NULL, ?, ?, ?, NULL, NULL, NULL)`)
	if err != nil {
		return err
	}
	defer ins.Close()
	// The search index row of a raw message, as sqlite/commit.go writes it: keyed by the
	// message's seq, with the session's scope token (hex of tenant and id, joined by an x).
	index, err := tx.PrepareContext(ctx, `INSERT INTO message_search (rowid, scope, body) VALUES (?, ?, ?)`)
	if err != nil {
		return err
	}
	defer index.Close()
	scope := "x" + hex.EncodeToString([]byte(recallSession))
	for i := range rows {
		a := &rows[i]
		role, kind, callID := a.columns()
		res, err := ins.ExecContext(ctx, recallSession, a.parent, a.pos, a.id, role, kind, a.content, callID, a.ref, a.tokens)
		if err != nil {
			return err
		}
		if a.ref != "" {
			continue
		}
		seq, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := index.ExecContext(ctx, seq, scope, a.content); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// indexBytes sums the pages of the FTS5 table's shadow tables.
func (l sqliteLoader) indexBytes(ctx context.Context) (int64, error) {
	var n int64
	err := l.db.QueryRowContext(ctx, `SELECT coalesce(sum(pgsize), 0) FROM dbstat WHERE name LIKE 'message\_search%' ESCAPE '\'`).Scan(&n)
	return n, err
}

func (l sqliteLoader) finish(ctx context.Context, tree archiveTree) error {
	_, err := l.db.ExecContext(ctx, `UPDATE sessions SET seq = ?, messages = ? WHERE tenant = '' AND id = ?`,
		tree.seq, tree.context, recallSession)
	return err
}

// recallPostgres measures RECALL and search on a Postgres store in a fresh schema of the
// database at dsn, dropped before it returns.
func recallPostgres(ctx context.Context, dsn string, leaves, samples int, prog *overheadProgress) (_ OverheadRecall, _ OverheadSearch, err error) {
	admin, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return OverheadRecall{}, OverheadSearch{}, hippocam.Errorf(hippocam.EUNAVAILABLE, "cannot reach postgres: %v", err)
	}
	cleanup := context.WithoutCancel(ctx)
	defer admin.Close(cleanup)
	schema := fmt.Sprintf("hippocam_bench_%d", time.Now().UnixNano())
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return OverheadRecall{}, OverheadSearch{}, err
	}
	defer func() {
		if _, derr := admin.Exec(cleanup, "DROP SCHEMA "+schema+" CASCADE"); derr != nil && err == nil {
			err = fmt.Errorf("drop schema %s: %w", schema, derr)
		}
	}()
	sdsn := schemaDSN(dsn, schema)
	db := postgres.New(sdsn)
	if err := db.Open(ctx); err != nil {
		return OverheadRecall{}, OverheadSearch{}, err
	}
	defer db.Close()
	conn, err := pgx.Connect(ctx, sdsn)
	if err != nil {
		return OverheadRecall{}, OverheadSearch{}, err
	}
	defer conn.Close(cleanup)
	return measureRecall(ctx, "postgres", db, postgresLoader{conn}, leaves, samples, prog)
}

// schemaDSN returns dsn with its search path set to schema, as a URL or key=value pairs.
func schemaDSN(dsn, schema string) string {
	if u, err := url.Parse(dsn); err == nil && (u.Scheme == "postgres" || u.Scheme == "postgresql") {
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " search_path=" + schema
}

// postgresLoader writes rows into a Postgres store's tables with COPY: into a staging table
// that also holds each raw row's search text, then into messages, where Postgres turns that text
// into the row's terms as the store's commit has it do (postgres/commit.go).
type postgresLoader struct{ conn *pgx.Conn }

// loaderColumns are the messages columns the loaders write.
var loaderColumns = []string{"tenant", "session_id", "parent", "pos", "id", "role", "kind", "content", "tool_calls", "tool_call_id", "ref", "tokens", "knowledge", "trace", "extra"}

func (l postgresLoader) write(ctx context.Context, rows []archiveRow) error {
	cols := strings.Join(loaderColumns, ", ")
	// The scope token and the search text, as postgres/search.go makes them.
	sum := md5.Sum([]byte("0:" + recallSession))
	scope := "h" + hex.EncodeToString(sum[:])
	return pgx.BeginFunc(ctx, l.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS load_stage ON COMMIT DELETE ROWS AS
			SELECT `+cols+`, ''::text AS search_text FROM messages WITH NO DATA`); err != nil {
			return err
		}
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"load_stage"}, append(loaderColumns, "search_text"), pgx.CopyFromSlice(len(rows), func(i int) ([]any, error) {
			a := &rows[i]
			role, kind, callID := a.columns()
			var text any
			if a.ref == "" {
				text = scope + " " + strings.Join(distinct(hippocam.SearchTerms(a.content)), " ")
			}
			return []any{"", recallSession, a.parent, int32(a.pos), a.id, role, kind, []byte(a.content),
				nil, callID, a.ref, int32(a.tokens), nil, nil, nil, text}, nil
		}))
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO messages (`+cols+`, terms)
			SELECT `+cols+`, strip(to_tsvector('simple', search_text)) FROM load_stage`)
		return err
	})
}

// distinct returns terms without repeats, in the order they first occur.
func distinct(terms []string) []string {
	seen := map[string]bool{}
	out := terms[:0:0]
	for _, t := range terms {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// indexBytes adds the two indexes search uses to the tsvector values they are built from
// (messages.terms, which only search reads).
func (l postgresLoader) indexBytes(ctx context.Context) (int64, error) {
	var n int64
	err := l.conn.QueryRow(ctx, `SELECT pg_relation_size('messages_search') + pg_relation_size('messages_recent') +
		(SELECT coalesce(sum(pg_column_size(terms)), 0) FROM messages)`).Scan(&n)
	return n, err
}

// finish also analyzes the tables, as autovacuum soon would in a live database: the planner
// then knows that a layer is a handful of rows among a million.
func (l postgresLoader) finish(ctx context.Context, tree archiveTree) error {
	if _, err := l.conn.Exec(ctx, `UPDATE sessions SET seq = $1, messages = $2 WHERE tenant = '' AND id = $3`,
		tree.seq, tree.context, recallSession); err != nil {
		return err
	}
	// Entries still in the GIN index's pending list move into the index proper, as autovacuum
	// would soon do.
	_, err := l.conn.Exec(ctx, `ANALYZE messages; ANALYZE sessions; SELECT gin_clean_pending_list('messages_search'::regclass)`)
	return err
}

// OverheadSearch is full-text search on one store (Store.Search, as the engine's search tool
// calls it) over the RECALL session's archive of Archived raw messages. IndexBytes is what the
// index adds to the store. Three kinds of query, each asking for the latest
// engine.SearchHits+1 matches: a key that one message holds (k<n>), a tag one message in 1,000
// holds, and a word every message holds.
type OverheadSearch struct {
	Store       string  `json:"store"`
	Archived    int     `json:"archived"`
	IndexBytes  int64   `json:"index_bytes"`
	Samples     int     `json:"samples"`
	KeyP50Ms    float64 `json:"key_p50_ms"`
	KeyP99Ms    float64 `json:"key_p99_ms"`
	TagP50Ms    float64 `json:"tag_p50_ms"`
	TagP99Ms    float64 `json:"tag_p99_ms"`
	CommonP50Ms float64 `json:"common_p50_ms"`
	CommonP99Ms float64 `json:"common_p99_ms"`
}

// measureSearch times Store.Search over the loaded RECALL session: samples queries for keys and
// for tags, a tenth as many for a word every leaf holds (each of those reads the most).
func measureSearch(ctx context.Context, name string, st hippocam.Store, l archiveLoader, leaves, samples int, prog *overheadProgress) (OverheadSearch, error) {
	row := OverheadSearch{Store: name, Archived: leaves, Samples: samples}
	var err error
	if row.IndexBytes, err = l.indexBytes(ctx); err != nil {
		return row, fmt.Errorf("index size: %w", err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	limit := engine.SearchHits + 1
	stage := "search " + name
	done, total := 0, 2*samples+max(1, samples/10)
	measure := func(n int, query func() (string, int)) (timings, error) {
		var lat timings
		for i := -recallWarmup / 10; i < n; i++ {
			q, want := query()
			t0 := time.Now()
			hits, err := st.Search(ctx, "", recallSession, q, limit)
			d := time.Since(t0)
			if err != nil {
				return nil, err
			} else if len(hits) != min(want, limit) {
				return nil, fmt.Errorf("search %q: %d hits, want %d", q, len(hits), min(want, limit))
			}
			if i >= 0 {
				lat, done = append(lat, d), done+1
				if done%100 == 0 || done == total {
					prog.report(stage, done, total)
				}
			}
		}
		return lat, nil
	}
	key, err := measure(samples, func() (string, int) { return fmt.Sprintf("k%d", rng.IntN(leaves)), 1 })
	if err != nil {
		return row, err
	}
	tag, err := measure(samples, func() (string, int) {
		t := rng.IntN(min(leaves, searchTagEvery))
		return fmt.Sprintf("t%d", t), (leaves - t + searchTagEvery - 1) / searchTagEvery
	})
	if err != nil {
		return row, err
	}
	common, err := measure(max(1, samples/10), func() (string, int) { return "tool output", leaves })
	if err != nil {
		return row, err
	}
	row.KeyP50Ms, row.KeyP99Ms = key.quantileMs(0.50), key.quantileMs(0.99)
	row.TagP50Ms, row.TagP99Ms = tag.quantileMs(0.50), tag.quantileMs(0.99)
	row.CommonP50Ms, row.CommonP99Ms = common.quantileMs(0.50), common.quantileMs(0.99)
	return row, nil
}
