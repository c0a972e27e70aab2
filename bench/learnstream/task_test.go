package learnstream

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
)

func TestReadBundledStream(t *testing.T) {
	f, err := os.Open("testdata/small.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tasks, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 13 || tasks[0].ID != "t01" || tasks[1].Source != "revenue" {
		t.Fatalf("read %d tasks: %+v", len(tasks), tasks[:2])
	}
	if d := tasks[2].Env.Decide["unit"]; d.Reference != "pallets" {
		t.Fatalf("a decision without a reference takes its first right value: %+v", d)
	}
	if m := tasks[1].Messages[1]; m.Role != hippocam.RoleUser || m.Kind != hippocam.KindRaw || !strings.HasPrefix(m.Content, "Weekly sales report") {
		t.Fatalf("message %+v", m)
	}
}

func TestReadNamesTheBadLine(t *testing.T) {
	good := `{"id":"a","source":"s","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name, line, want string
	}{
		{"ErrNotJSON", `{"id": "b", `, "stream line 3"},
		{"ErrNoID", `{"messages":[{"role":"user","content":"hi"}]}`, "stream line 3: the task has no id"},
		{"ErrSameID", good, `stream line 3: task id "a" was already used on line 1`},
		{"ErrNoUserMessage", `{"id":"b","messages":[{"role":"system","content":"hi"}]}`, "stream line 3: task \"b\" has no user message"},
		{"ErrAssistantRole", `{"id":"b","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x"}]}`, "stream line 3: message 2"},
		{"ErrLateSystem", `{"id":"b","messages":[{"role":"user","content":"hi"},{"role":"system","content":"x"}]}`, "stream line 3: message 2: system messages come first"},
		{"ErrNoRightValue", `{"id":"b","messages":[{"role":"user","content":"hi"}],"env":{"decide":{"k":{"right":[]}}}}`, "stream line 3: decision \"k\" has no right value"},
		{"ErrReferenceNotRight", `{"id":"b","messages":[{"role":"user","content":"hi"}],"env":{"decide":{"k":{"right":["x"],"reference":"y"}}}}`, "stream line 3: decision \"k\": the reference"},
		{"ErrEstimateKey", numeric(`"estimate":{"sales[store=n":{"truth":1,"tol":1}}`), `stream line 3: estimate "sales[store=n": not a key`},
		{"ErrEstimateNoTruth", numeric(`"estimate":{"sales[store=n]":{"tol":1}}`), `stream line 3: estimate "sales[store=n]" has no truth`},
		{"ErrEstimateTol", numeric(`"estimate":{"sales[store=n]":{"truth":0,"tol":0}}`), `stream line 3: estimate "sales[store=n]": tol must be positive`},
		{"ErrEstimateNotAnObject", numeric(`"estimate":{"sales[store=n]":5}`), `stream line 3: json`},
		{"ErrSameKeyTwice", numeric(`"estimate":{"s[a=1,b=2]":{"truth":1,"tol":1}},"curve":{"s[b=2,a=1]":{"truth":[1],"realized":[1],"tol":1}}`), `stream line 3: curve "s[b=2,a=1]": the same key as estimate "s[a=1,b=2]"`},
		{"ErrDecisionAndEstimate", numeric(`"decide":{"k":{"right":["x"]}},"estimate":{"k":{"truth":1,"tol":1}}`), `stream line 3: estimate "k": the same key as decision "k"`},
		{"ErrCurveEmpty", numeric(`"curve":{"c[p=a]":{"truth":[],"realized":[],"tol":1}}`), `stream line 3: curve "c[p=a]": the truth has no value`},
		{"ErrCurveRealizedLength", numeric(`"curve":{"c[p=a]":{"truth":[0.9,0.8],"realized":[0.9],"tol":1}}`), `curve "c[p=a]": realized has 1 values, the truth 2`},
		{"ErrCurveRises", numeric(`"curve":{"c[p=a]":{"truth":[0.9,0.8],"realized":[0.9,0.95],"tol":1}}`), `curve "c[p=a]": realized value 2 (0.95) is above value 1 (0.9)`},
		{"ErrCurveNotProbability", numeric(`"curve":{"c[p=a]":{"truth":[1.2],"realized":[0.9],"tol":1}}`), `truth value 1 is 1.2, not a probability`},
		{"ErrCurveTol", numeric(`"curve":{"c[p=a]":{"truth":[0.9],"realized":[0.9]}}`), `curve "c[p=a]": tol must be positive, not 0`},
		{"ErrEntitiesField", numeric(`"entities":{"identity":"freq","field":"po wer","truth":[[1,2]],"tol_identity":1,"tol":1}`), `stream line 3: entities: the field "po wer" is not a field name`},
		{"ErrEntitiesSameField", numeric(`"entities":{"identity":"freq","field":"freq","truth":[[1,2]],"tol_identity":1,"tol":1}`), `entities: the identity and the field are both "freq"`},
		{"ErrEntitiesNoTruth", numeric(`"entities":{"identity":"freq","field":"power","truth":[],"tol_identity":1,"tol":1}`), `entities: the truth lists no entity`},
		{"ErrEntitiesPair", numeric(`"entities":{"identity":"freq","field":"power","truth":[[1,2],[3]],"tol_identity":1,"tol":1}`), `entities: truth 2 has 1 numbers, not 2 (freq, power)`},
		{"ErrEntitiesTolIdentity", numeric(`"entities":{"identity":"freq","field":"power","truth":[[1,2]],"tol":1}`), `entities: tol_identity must be positive, not 0`},
		{"ErrEntitiesTol", numeric(`"entities":{"identity":"freq","field":"power","truth":[[1,2]],"tol_identity":1,"tol":-1}`), `entities: tol must be positive, not -1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(good + "\n\n" + tt.line + "\n"))
			if hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want EINVALID containing %q", err, tt.want)
			}
		})
	}
}

// numeric is a stream line whose env holds the given members.
func numeric(env string) string {
	return `{"id":"b","messages":[{"role":"user","content":"hi"}],"env":{` + env + `}}`
}

func TestScore(t *testing.T) {
	task := &Task{ID: "t", Messages: []hippocam.Message{{Role: hippocam.RoleUser, Content: "Report\ndecide status: open | closed\ndecide mode: fast | slow | safe\n!ask owner"}},
		Env: Env{Decide: map[string]Decision{"status": {Right: []string{"open"}, Reference: "open"}, "mode": {Right: []string{"fast", "safe"}, Reference: "safe"}},
			Ask: map[string]string{"owner": "Dana Ruiz"}}}
	tests := []struct {
		name     string
		answers  []string
		reward   float64
		feedback string
	}{
		{"AllRight", []string{"status = open\nmode = safe\nowner := Dana Ruiz"}, 1,
			"feedback: status = open right\nfeedback: mode = safe right\nfeedback: owner := Dana Ruiz right"},
		{"RightButNotTheReference", []string{"- status = open\n- mode = fast\nowner := Dana"}, 2.0 / 3,
			"feedback: status = open right\nfeedback: mode = fast right, reference mode = safe\nfeedback: owner := Dana wrong"},
		{"LaterLineWins", []string{"status = open", "status = closed\nmode = slow"}, 0,
			"feedback: status = closed wrong\nfeedback: mode = slow wrong\nfeedback: owner: no answer, wrong"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := score(task, tt.answers)
			if !got.Scored || got.Reward != tt.reward || got.Feedback != tt.feedback {
				t.Fatalf("score = %+v\nwant reward %v, feedback\n%s", got, tt.reward, tt.feedback)
			}
		})
	}
	if s := score(&Task{ID: "n", Messages: task.Messages}, []string{"status = open"}); s.Scored || s.Feedback != "" {
		t.Fatalf("a task with no item is scored: %+v", s)
	}
}

func TestRouting(t *testing.T) {
	tasks := []Task{{Source: "a"}, {Source: "a"}, {Source: "b"}, {Source: "b"}}
	tests := []struct {
		name   string
		placed []string
		want   Routing
	}{
		{"Perfect", []string{"c1", "c1", "c2", "c2"}, Routing{Agreement: 1}},
		{"AllMerged", []string{"c1", "c1", "c1", "c1"}, Routing{Agreement: 2.0 / 6, Merged: 1}},
		{"OneSplit", []string{"c1", "c3", "c2", "c2"}, Routing{Agreement: 5.0 / 6, OverSplit: 1}},
		{"StatelessIsAlone", []string{"c1", "", "c2", "c2"}, Routing{Agreement: 5.0 / 6, OverSplit: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := routing(tasks, tt.placed); !reflect.DeepEqual(*got, tt.want) {
				t.Fatalf("routing = %+v, want %+v", *got, tt.want)
			}
		})
	}
}
