package sim

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/eval"
	"github.com/hippocam/hippocam/learn"
	"github.com/hippocam/hippocam/memory/lessons"
	"github.com/hippocam/hippocam/memory/numeric"
	"github.com/hippocam/hippocam/memory/reasoningbank"
)

// The headings and marks the components write into their requests, which the simulated model
// reads by the components' own constants: a copy of one as a literal in sim would go on matching
// the old text after the component's wording changed.
var componentMarkers = map[string]string{
	"lessons.SectionMark":           lessons.SectionMark,
	"lessons.SubsectionMark":        lessons.SubsectionMark,
	"lessons.HeadingTask":           lessons.HeadingTask,
	"lessons.HeadingAttempt":        lessons.HeadingAttempt,
	"lessons.HeadingFeedback":       lessons.HeadingFeedback,
	"lessons.HeadingReflection":     lessons.HeadingReflection,
	"lessons.HeadingCandidate":      lessons.HeadingCandidate,
	"lessons.HeadingSimilarLessons": lessons.HeadingSimilarLessons,
	"lessons.EvidenceLabel":         lessons.EvidenceLabel,
	"lessons.VerdictSurprise":       lessons.VerdictSurprise,
	"numeric.SystemLinePrefix":      numeric.SystemLinePrefix,
	"numeric.BindingsLinePrefix":    numeric.BindingsLinePrefix,
	"numeric.EventLine":             numeric.EventLine,
	"reasoningbank.OutcomeLine":     reasoningbank.OutcomeLine,
	"learn.RejectedMarker":          learn.RejectedMarker,
	"hippocam.RefTagPrefix":         hippocam.RefTagPrefix,
	"engine.SpanLatest":             engine.SpanLatest,
	"engine.SpanAbove":              engine.SpanAbove,
	"engine.SpanStartPrefix":        engine.SpanStartPrefix,
	"engine.SpanEndPrefix":          engine.SpanEndPrefix,
	"engine.ReviewStartPrefix":      engine.ReviewStartPrefix,
	"engine.SizeMarker":             engine.SizeMarker,
	"engine.ReviewNothingNew":       engine.ReviewNothingNew,
	"engine.SpanAfter":              engine.SpanAfter,
	"engine.SpanBefore":             engine.SpanBefore,
	"eval.JudgeReferenceHeading":    eval.JudgeReferenceHeading,
	"eval.JudgeAnswerHeading":       eval.JudgeAnswerHeading,
}

// No source file of sim (tests aside) spells one of the components' markers as a literal of its
// own, trimmed of spaces or not: it uses the constant.
func TestMarkersAreTheComponentsConstants(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			for name, marker := range componentMarkers {
				if s == marker || strings.TrimSpace(s) == strings.TrimSpace(marker) {
					t.Errorf("%s: the literal %q copies %s; use the constant", fset.Position(lit.Pos()), s, name)
				}
			}
			return true
		})
	}
}
