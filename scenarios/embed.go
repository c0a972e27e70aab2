// Package scenarios holds the bundled docs/sim.md scenarios (written by gen.py), embedded so that the
// binary can replay one without the source tree.
package scenarios

import "embed"

// FS holds every bundled scenario (*.jsonl) and its expected answers (*.expected).
//
//go:embed *.jsonl *.expected
var FS embed.FS
