// Package eval runs conversation-memory benchmarks (LoCoMo, LongMemEval) against a model
// endpoint under several conditions: through Hippocam's proxy, with the whole conversation in the
// prompt, and with only its newest part that fits a window. Every answer is graded by an LLM
// judge against the gold answer, and the results are written as JSON Lines, a Markdown table and
// an SVG plot (docs/eval.md).
package eval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
)

// The dataset formats Load reads.
const (
	FormatLoCoMo      = "locomo"
	FormatLongMemEval = "longmemeval"
)

// Turn is one utterance of a conversation.
type Turn struct {
	Speaker string
	Text    string
}

// Session is one dated sitting of a conversation.
type Session struct {
	Date  string
	Turns []Turn
}

// Question is one question about a sample's conversation, with its gold answer.
type Question struct {
	ID       string
	Text     string
	Category string
	Gold     string
	// Date is when the question is asked, when the dataset says (LongMemEval).
	Date string
}

// Sample is one conversation and the questions asked about it.
type Sample struct {
	ID        string
	Sessions  []Session
	Questions []Question
}

// Dataset is what Load read: the samples, and how many questions it left out and why.
type Dataset struct {
	Format  string
	Samples []Sample
	// Excluded counts the questions left out, by reason.
	Excluded map[string]int
}

// Questions counts the questions of every sample.
func (d *Dataset) Questions() int {
	n := 0
	for _, s := range d.Samples {
		n += len(s.Questions)
	}
	return n
}

// Load reads a dataset file. format is FormatLoCoMo, FormatLongMemEval, or "" to tell them
// apart by their fields.
func Load(path, format string) (*Dataset, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	d, err := Parse(data, format)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return d, nil
}

// Parse reads a dataset from its JSON text (see Load).
func Parse(data []byte, format string) (*Dataset, error) {
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(data, &items); err != nil {
		return nil, fmt.Errorf("not a JSON list of samples: %v", err)
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("the dataset holds no samples")
	}
	if format == "" {
		switch {
		case items[0]["conversation"] != nil && items[0]["qa"] != nil:
			format = FormatLoCoMo
		case items[0]["haystack_sessions"] != nil && items[0]["question"] != nil:
			format = FormatLongMemEval
		default:
			return nil, fmt.Errorf("cannot tell the format: the first sample has neither conversation and qa (LoCoMo) nor question and haystack_sessions (LongMemEval); give --format")
		}
	}
	d := &Dataset{Format: format, Excluded: map[string]int{}}
	for i, it := range items {
		var s Sample
		var err error
		switch format {
		case FormatLoCoMo:
			s, err = parseLoCoMo(it, d.Excluded)
		case FormatLongMemEval:
			s, err = parseLongMemEval(it)
		default:
			return nil, fmt.Errorf("unknown format %q (locomo or longmemeval)", format)
		}
		if err != nil {
			return nil, fmt.Errorf("sample %d: %w", i+1, err)
		}
		if s.ID == "" {
			s.ID = strconv.Itoa(i + 1)
		}
		d.Samples = append(d.Samples, s)
	}
	return d, nil
}

// text reads a JSON string, number or boolean as text ("" for null or absent).
func text(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	switch v.(type) {
	case float64, bool:
		return string(raw), nil
	}
	return "", fmt.Errorf("expected text, got %s", raw)
}

// locomoTurn is one turn of a LoCoMo session.
type locomoTurn struct {
	Speaker     string          `json:"speaker"`
	DiaID       string          `json:"dia_id"`
	Text        string          `json:"text"`
	BlipCaption string          `json:"blip_caption"`
	ImgURL      json.RawMessage `json:"img_url"`
}

// locomoQA is one LoCoMo question.
type locomoQA struct {
	Question          string          `json:"question"`
	Answer            json.RawMessage `json:"answer"`
	AdversarialAnswer json.RawMessage `json:"adversarial_answer"`
	Category          json.RawMessage `json:"category"`
}

// LoCoMoAdversarial is the LoCoMo category of questions about things the conversation never
// says; their gold is an adversarial_answer, and Load leaves them out.
const LoCoMoAdversarial = "5"

// parseLoCoMo reads one LoCoMo sample: sessions session_1, session_2, … in number order, each
// dated by session_N_date_time; a shared image becomes a bracketed note with its caption.
// Category 5 questions are counted in excluded and left out.
func parseLoCoMo(it map[string]json.RawMessage, excluded map[string]int) (Sample, error) {
	var s Sample
	id, err := text(it["sample_id"])
	if err != nil {
		return s, fmt.Errorf("sample_id: %v", err)
	}
	s.ID = id
	var conv map[string]json.RawMessage
	if err := json.Unmarshal(it["conversation"], &conv); err != nil {
		return s, fmt.Errorf("conversation: %v", err)
	}
	var nums []int
	for k := range conv {
		if rest, ok := strings.CutPrefix(k, "session_"); ok {
			if n, err := strconv.Atoi(rest); err == nil && n > 0 {
				nums = append(nums, n)
			}
		}
	}
	sort.Ints(nums)
	for _, n := range nums {
		var turns []locomoTurn
		if err := json.Unmarshal(conv["session_"+strconv.Itoa(n)], &turns); err != nil {
			return s, fmt.Errorf("session_%d: %v", n, err)
		}
		date, err := text(conv[fmt.Sprintf("session_%d_date_time", n)])
		if err != nil {
			return s, fmt.Errorf("session_%d_date_time: %v", n, err)
		}
		sess := Session{Date: date}
		for _, t := range turns {
			body := t.Text
			if t.BlipCaption != "" {
				body = strings.TrimSpace(body + " [shares an image: " + t.BlipCaption + "]")
			}
			sess.Turns = append(sess.Turns, Turn{Speaker: t.Speaker, Text: body})
		}
		s.Sessions = append(s.Sessions, sess)
	}
	if len(s.Sessions) == 0 {
		return s, fmt.Errorf("conversation holds no session_N")
	}
	var qas []locomoQA
	if err := json.Unmarshal(it["qa"], &qas); err != nil {
		return s, fmt.Errorf("qa: %v", err)
	}
	for i, qa := range qas {
		cat, err := text(qa.Category)
		if err != nil {
			return s, fmt.Errorf("qa %d: category: %v", i+1, err)
		}
		if cat == LoCoMoAdversarial {
			excluded["adversarial (LoCoMo category 5)"]++
			continue
		}
		gold, err := text(qa.Answer)
		if err != nil {
			return s, fmt.Errorf("qa %d: answer: %v", i+1, err)
		}
		if gold == "" {
			excluded["no gold answer"]++
			continue
		}
		s.Questions = append(s.Questions, Question{ID: fmt.Sprintf("%s/q%d", s.ID, i+1), Text: qa.Question, Category: cat, Gold: gold})
	}
	return s, nil
}

// lmeTurn is one message of a LongMemEval haystack session.
type lmeTurn struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// parseLongMemEval reads one LongMemEval item: a single question over its own haystack of
// sessions, each dated by haystack_dates. An abstention question (its id ends in _abs) is in
// category "abstention", whatever its question_type.
func parseLongMemEval(it map[string]json.RawMessage) (Sample, error) {
	var s Sample
	var q Question
	var err error
	field := func(name string, dst *string) {
		if err == nil {
			if *dst, err = text(it[name]); err != nil {
				err = fmt.Errorf("%s: %v", name, err)
			}
		}
	}
	field("question_id", &q.ID)
	field("question_type", &q.Category)
	field("question", &q.Text)
	field("answer", &q.Gold)
	field("question_date", &q.Date)
	if err != nil {
		return s, err
	}
	if q.Text == "" {
		return s, fmt.Errorf("question is empty")
	}
	if strings.HasSuffix(q.ID, "_abs") {
		q.Category = "abstention"
	}
	var sessions [][]lmeTurn
	if err := json.Unmarshal(it["haystack_sessions"], &sessions); err != nil {
		return s, fmt.Errorf("haystack_sessions: %v", err)
	}
	var dates []string
	if raw := it["haystack_dates"]; raw != nil {
		if err := json.Unmarshal(raw, &dates); err != nil {
			return s, fmt.Errorf("haystack_dates: %v", err)
		}
	}
	if len(dates) != 0 && len(dates) != len(sessions) {
		return s, fmt.Errorf("haystack_dates has %d dates for %d sessions", len(dates), len(sessions))
	}
	for i, turns := range sessions {
		sess := Session{}
		if len(dates) > 0 {
			sess.Date = dates[i]
		}
		for _, t := range turns {
			sess.Turns = append(sess.Turns, Turn{Speaker: speakerOf(t.Role), Text: t.Content})
		}
		s.Sessions = append(s.Sessions, sess)
	}
	if len(s.Sessions) == 0 {
		return s, fmt.Errorf("haystack_sessions is empty")
	}
	s.ID, s.Questions = q.ID, []Question{q}
	return s, nil
}

// speakerOf names a chat role as a speaker: "User", "Assistant".
func speakerOf(role string) string {
	if role == "" {
		return "Unknown"
	}
	return strings.ToUpper(role[:1]) + role[1:]
}
