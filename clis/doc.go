// Package clis holds no code: its tests drive the coding agents people run (Claude Code, Codex,
// opencode), installed from npm at pinned versions into testdata/, through `hippocam serve` in
// front of the simulated model, with the settings docs/usage.md gives. They are a package of their
// own so that their minutes count against a test binary of their own.
package clis
