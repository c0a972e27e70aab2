package library_test

import (
	"slices"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/library"
	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

func env() *learn.Env {
	tok := tokenizer.MustDefault()
	return &learn.Env{Model: sim.New(tok).InProcess(), Tok: tok}
}

func TestNames(t *testing.T) {
	want := []string{"icl", "reasoning_bank", "lessons", "hippocam", "regression", "hazard", "entities"}
	if got := library.Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
}

func TestNewBuildsEverySystemByItsID(t *testing.T) {
	for _, name := range library.Names() {
		s, err := library.New(name, env())
		if err != nil {
			t.Fatalf("New(%q): %v", name, err)
		}
		if s.Name() != name || s.Description() == "" {
			t.Fatalf("New(%q) built %q with description %q", name, s.Name(), s.Description())
		}
	}
}

func TestLibrary(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		systems, err := library.Library(env(), []string{"hippocam", "icl"})
		if err != nil || len(systems) != 2 || systems[0].Name() != "hippocam" || systems[1].Name() != "icl" {
			t.Fatalf("Library = %v, %v", systems, err)
		}
		all, err := library.Library(env(), nil)
		if err != nil || len(all) != len(library.Names()) {
			t.Fatalf("Library(nil) = %d systems, %v", len(all), err)
		}
	})
	for name, ids := range map[string][]string{"ErrUnknown": {"icl", "vector_db"}, "ErrTwice": {"icl", "icl"}} {
		t.Run(name, func(t *testing.T) {
			if _, err := library.Library(env(), ids); hippocam.ErrorCode(err) != hippocam.EINVALID {
				t.Fatalf("Library(%v) error %v, want EINVALID", ids, err)
			}
		})
	}
}
