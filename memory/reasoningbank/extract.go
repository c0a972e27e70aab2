package reasoningbank

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/learn"
)

var (
	//go:embed prompts/success.txt
	successPrompt string
	//go:embed prompts/failure.txt
	failurePrompt string
	//go:embed prompts/notes.txt
	notesPrompt string
)

// MaxItems bounds the notes drawn from one trajectory.
const MaxItems = 3

// Limits on one note, in bytes.
const (
	maxTitle       = 120
	maxDescription = 600
	maxContent     = 1200
)

// OutcomeLine starts the line of the extraction instruction that gives the judge's verdict
// ("Outcome: success"); the reason follows on the next line.
const OutcomeLine = "Outcome: "

// Notes is the extraction's answer (role rb_extract).
type Notes struct {
	Items []Item `json:"items"`
}

// extractSchema is the JSON schema of Notes.
var extractSchema = json.RawMessage(`{"type":"object","properties":{"items":{"type":"array","maxItems":3,"items":` +
	`{"type":"object","properties":{` +
	`"title":{"type":"string","description":"a few words"},` +
	`"description":{"type":"string","description":"in which situations the note applies, and in which it does not"},` +
	`"content":{"type":"string","description":"one to three sentences: what to do"}},` +
	`"required":["title","description","content"],"additionalProperties":false}}},` +
	`"required":["items"],"additionalProperties":false}`)

// Validate checks the notes against the trajectory they were drawn from: at most MaxItems, every
// field present and short, the title on one line, no note twice, and no note that merely copies
// a fact the trajectory stated (a line `KEY := VALUE` found in shown): notes are what to do,
// never the task's data.
func (n *Notes) Validate(shown string) error {
	if len(n.Items) > MaxItems {
		return fmt.Errorf("%d notes; write at most %d", len(n.Items), MaxItems)
	}
	facts := statedFacts(shown)
	seen := map[string]int{}
	for i, it := range n.Items {
		title, desc, content := strings.TrimSpace(it.Title), strings.TrimSpace(it.Description), strings.TrimSpace(it.Content)
		switch {
		case title == "" || desc == "" || content == "":
			return fmt.Errorf("note %d: title, description and content must all be given", i+1)
		case strings.ContainsAny(title, "\r\n"):
			return fmt.Errorf("note %d: the title must be one line", i+1)
		case len(title) > maxTitle || len(desc) > maxDescription || len(content) > maxContent:
			return fmt.Errorf("note %d is too long: a title of at most %d bytes, a description of %d, a content of %d", i+1, maxTitle, maxDescription, maxContent)
		}
		for _, l := range strings.Split(content, "\n") {
			if facts[strings.TrimSpace(l)] {
				return fmt.Errorf("note %d copies a value the task stated (%q): notes say what to do, they do not keep the task's data", i+1, strings.TrimSpace(l))
			}
		}
		k := strings.ToLower(title + "\x00" + content)
		if j, dup := seen[k]; dup {
			return fmt.Errorf("notes %d and %d are the same note: keep one", j, i+1)
		}
		seen[k] = i + 1
	}
	return nil
}

// statedFacts returns the lines of text that state a fact in the engine's notation (`KEY :=
// VALUE`), trimmed.
func statedFacts(text string) map[string]bool {
	facts := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "-*•"))
		if k, _, ok := strings.Cut(l, ":="); ok && k != "" && !strings.ContainsAny(strings.TrimSpace(k), " \t") {
			facts[l] = true
		}
	}
	return facts
}

// extract draws the notes from one trajectory with the prompt for its verdict.
func (s *System) extract(ctx context.Context, req, shown, feedback string, v *Verdict) ([]Item, error) {
	prompt := successPrompt
	if v.Outcome == Failure {
		prompt = failurePrompt
	}
	prompt = strings.TrimSpace(prompt) + "\n\n" + notesPrompt
	instruction := material(req, shown, feedback) + "\n" + OutcomeLine + v.Outcome + "\nThe reviewer's reason: " + oneLine(v.Rationale) + "\n"
	var notes Notes
	err := learn.Call(ctx, s.env, hippocam.CallRBExtract, prompt, instruction, extractSchema, func(args string) error {
		notes = Notes{}
		if err := learn.Decode(args, &notes); err != nil {
			return err
		}
		return notes.Validate(shown + "\n" + req)
	})
	if err != nil {
		return nil, err
	}
	items := make([]Item, len(notes.Items))
	for i, it := range notes.Items {
		items[i] = Item{Title: strings.TrimSpace(it.Title), Description: strings.TrimSpace(it.Description), Content: strings.TrimSpace(it.Content)}
	}
	return items, nil
}

// oneLine folds text onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
