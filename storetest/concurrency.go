package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/hippocam/hippocam"
)

func testConcurrency(t *testing.T, open func(t *testing.T) hippocam.Store) {
	const workers = 8
	t.Run("SameVersion", func(t *testing.T) {
		// Commits racing from one version: exactly one wins, every other one gets ECONFLICT.
		st := open(t)
		mustCreate(t, st, "acme", "s1")
		var want []string
		for round := range 5 {
			base := mustSession(t, st, "acme", "s1")
			errs := make([]error, workers)
			start := make(chan struct{})
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					mine := base.Clone()
					<-start
					errs[w] = commit(t, st, mine, hippocam.AppendOp(raw(fmt.Sprintf("m%d.%d", round, w), "racing")))
				})
			}
			close(start)
			wg.Wait()
			winner := -1
			for w, err := range errs {
				switch {
				case err == nil && winner >= 0:
					t.Fatalf("round %d: workers %d and %d both committed from version %d", round, winner, w, base.Version)
				case err == nil:
					winner = w
				case hippocam.ErrorCode(err) != hippocam.ECONFLICT:
					t.Fatalf("round %d, worker %d: err = %v, want %s", round, w, err, hippocam.ECONFLICT)
				}
			}
			if winner < 0 {
				t.Fatalf("round %d: no commit won", round)
			}
			want = append(want, fmt.Sprintf("m%d.%d", round, winner))
			got := mustSession(t, st, "acme", "s1")
			if got.Version != base.Version+1 || !slices.Equal(contextIDs(got), want) {
				t.Fatalf("round %d: version %d, context %v; want %d, %v", round, got.Version, contextIDs(got), base.Version+1, want)
			}
		}
	})
	t.Run("Retry", func(t *testing.T) {
		// Workers that reload and retry on ECONFLICT all get through, one commit at a time.
		const each = 5
		st := open(t)
		mustCreate(t, st, "acme", "s1")
		errs := make(chan error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := 0; i < each; {
					s, err := st.Session(t.Context(), "acme", "s1")
					if err != nil {
						errs <- err
						return
					}
					err = commit(t, st, s, hippocam.AppendOp(raw(fmt.Sprintf("w%d.%d", w, i), "retried")))
					switch hippocam.ErrorCode(err) {
					case "":
						i++
					case hippocam.ECONFLICT:
					default:
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		got := mustSession(t, st, "acme", "s1")
		if got.Version != workers*each || len(got.Context) != workers*each {
			t.Fatalf("version %d with %d messages, want %d", got.Version, len(got.Context), workers*each)
		}
		next := make([]int, workers)
		for _, m := range got.Context {
			var w, i int
			if _, err := fmt.Sscanf(m.ID, "w%d.%d", &w, &i); err != nil || i != next[w] {
				t.Fatalf("context out of order at %s: %v", m.ID, contextIDs(got))
			}
			next[w]++
		}
	})
	t.Run("ManySessions", func(t *testing.T) {
		// Commits to different sessions never conflict.
		const each = 10
		st := open(t)
		errs := make(chan error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			s := mustCreate(t, st, "acme", fmt.Sprintf("s%d", w))
			wg.Go(func() {
				for i := range each {
					if i%3 == 2 {
						op := hippocam.ReplaceOp([]string{fmt.Sprintf("m%d", i-1)}, memory(fmt.Sprintf("mem%d", i), fmt.Sprintf("r%d", i), "x"))
						if err := commit(t, st, s, op); err != nil {
							errs <- err
							return
						}
					}
					if err := commit(t, st, s, hippocam.AppendOp(raw(fmt.Sprintf("m%d", i), "mine"))); err != nil {
						errs <- fmt.Errorf("session %s, commit %d: %w", s.ID, i, err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		for w := range workers {
			got := mustSession(t, st, "acme", fmt.Sprintf("s%d", w))
			if len(got.Context) != each {
				t.Errorf("session s%d has %d messages, want %d", w, len(got.Context), each)
			}
		}
	})
}
