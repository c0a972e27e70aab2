// Package progress draws the progress of a long run on a terminal: the learning benchmark's
// tasks, the evaluation's questions.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Bar returns a progress function that redraws one line on w, in place, as a bar with
// the share done and the counts: `learn [#########...........]  45% 1440/3200`. It draws only
// when the bar or the percentage changes, and ends the line when done reaches total. It is safe
// for concurrent use. Callers give it a terminal only.
func Bar(w io.Writer, label string) func(done, total int) {
	const width = 30
	var mu sync.Mutex
	last, finished := "", false
	return func(done, total int) {
		if total <= 0 {
			return
		}
		done = min(max(done, 0), total)
		filled := done * width / total
		line := fmt.Sprintf("\r%s [%s%s] %3d%% %d/%d", label, strings.Repeat("#", filled), strings.Repeat(".", width-filled), done*100/total, done, total)
		mu.Lock()
		defer mu.Unlock()
		key := line[:strings.LastIndexByte(line, ']')+5] // the bar and the percentage
		if finished || (key == last && done < total) {
			return
		}
		last = key
		if done == total {
			line, finished = line+"\n", true
		}
		io.WriteString(w, line)
	}
}

// IsTerminal reports whether w is a terminal, where a progress bar redrawn in place makes sense.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
