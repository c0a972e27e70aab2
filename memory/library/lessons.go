package library

import (
	"encoding/json"

	"github.com/hippocam/hippocam/memory/lessons"
)

// The lessons system offers more than a memory system: its lessons are a product of their own,
// which people list, search, delete, and carry in and out as a Markdown file (the REST API's
// /api/lessons, the MCP server's search_lessons and lessons.md, `hippocam learn --lessons-out`).
// Those callers reach them here, so that they import no system's package.

// LessonsSystem is the id of the system that keeps lessons.
const LessonsSystem = lessons.Name

// Lessons as shown, and their status.
type (
	// LessonsView is a lessons state as the REST API shows it.
	LessonsView = lessons.StateView
	// LessonView is one lesson as shown.
	LessonView = lessons.LessonView
	// LessonStatus says whether a lesson is in force.
	LessonStatus = lessons.Status
	// LessonsState is a lessons state as the system keeps it.
	LessonsState = lessons.State
)

// The statuses of a lesson.
const (
	LessonActive     = lessons.Active
	LessonSuperseded = lessons.Superseded
)

// ViewLessons renders a lessons state for the REST API (lessons.View).
func ViewLessons(state json.RawMessage) (*LessonsView, error) { return lessons.View(state) }

// ParseLessons reads a lessons state (lessons.ParseState).
func ParseLessons(state json.RawMessage) (*LessonsState, error) { return lessons.ParseState(state) }

// ExportLessons writes a lessons state as the lessons file (lessons.Export).
func ExportLessons(state json.RawMessage) ([]byte, error) { return lessons.Export(state) }

// DeleteLesson withdraws one lesson of a state, as its user deleted it (lessons.Delete).
func DeleteLesson(state json.RawMessage, id string) (json.RawMessage, bool, error) {
	return lessons.Delete(state, id)
}

// Importing a lessons file, and what it changed.
type (
	// LessonsImportOptions says how a file is read in (lessons.ImportOptions).
	LessonsImportOptions = lessons.ImportOptions
	// LessonsImportResult is the state after an import and what it added, edited and withdrew.
	LessonsImportResult = lessons.ImportResult
)

// ImportLessonsFile reads a lessons file into a lessons state and says what it changed
// (lessons.ImportFile).
func ImportLessonsFile(state json.RawMessage, md []byte, opts LessonsImportOptions) (*LessonsImportResult, error) {
	return lessons.ImportFile(state, md, opts)
}
