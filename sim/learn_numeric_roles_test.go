package sim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
)

// adapterInstruction lays out an adapter request as memory/numeric does.
func adapterInstruction(system, warmup, current string) string {
	return "Memory system: " + system + " (some_operator_v1)\n\n" +
		"Bind the fields you see to the runtime's roles.\n\n" +
		"Completed task (the warm-up):\n" + warmup + "\n\nCurrent task:\n" + current
}

// extractorInstruction lays out an extractor request as memory/numeric does.
func extractorInstruction(system, bindings, event string) string {
	return "Memory system: " + system + " (some_operator_v1)\nBindings: " + bindings + "\n\n" +
		"Copy the event's numbers into records.\n\nEvent:\n" + event
}

// roleAnswer is the text answer of role to a request ending with the given messages.
func roleAnswer(t *testing.T, role hippocam.CallRole, msgs ...wire.ChatMessage) string {
	t.Helper()
	all := append([]wire.ChatMessage{system("You configure a memory system.")}, msgs...)
	return answerText(t, complete(t, mustModel(t), role, chat(all...)))
}

const (
	salesWarmup = "[user]\nWeekly sales forecast\nobs sales[store=north,region=eu,week=10] = 117.0\n" +
		"estimate sales[store=north,region=eu,week=11]\n[feedback]\nfeedback: sales[store=north,region=eu,week=11] = 117, outcome sales[store=north,region=eu,week=11] = 118.4"
	salesCurrent = "[user]\nWeekly sales forecast\n- obs sales[week=11,store=south,region=us] = 90\nestimate sales[week=12,store=south,region=us]"
	churnWarmup  = "[user]\nChurn by plan\ncounts churn[plan=basic,region=eu] interval=1 at_risk=40 events=4\nestimate-curve churn[plan=basic,region=eu] over 6"
	churnCurrent = "[user]\nChurn by plan\nestimate-curve churn[plan=pro,region=eu] over 6"
	specWarmup   = "[user]\nSpectrum scan\ndet freq=103.42 bw=0.20 power=-45.1\ndet freq=250 bw=1.5 power=-60 snr=12\nestimate-entities power"
	specCurrent  = "[user]\nSpectrum scan\ndet freq=103.40 bw=0.21 power=-45.3\nestimate-entities power"
)

func TestAdapter(t *testing.T) {
	tests := []struct {
		name, system, warmup, current, want string
	}{
		{"RegressionDefaults", "regression", salesWarmup, salesCurrent,
			`{"target":"sales","key":"store","time":"week","factors":["region"],"family":"real"}`},
		{"RegressionWithoutTime", "regression", "[user]\nestimate score[team=red,league=a]", "[user]\nobs score[team=blue,league=a] = 3",
			`{"target":"score","key":"team","time":"","factors":["league"],"family":"real"}`},
		{"RegressionBind", "regression", salesWarmup, "#bind sales=positive store=key\n- #bind week=time region=factor week=key\n" + salesCurrent,
			`{"target":"sales","key":"store","time":"week","factors":["region"],"family":"positive"}`},
		{"RegressionBindLeavesOutTheRest", "regression", salesWarmup, "#bind region=key\n" + salesCurrent,
			`{"target":"sales","key":"region","time":"","factors":[],"family":"real"}`},
		{"HazardDefaults", "hazard", churnWarmup, churnCurrent,
			`{"target":"churn","entity":["plan","region"],"contexts":[],"intervals":6}`},
		{"HazardBind", "hazard", churnWarmup, "#bind plan=entity region=context\n" + churnCurrent,
			`{"target":"churn","entity":["plan"],"contexts":["region"],"intervals":6}`},
		{"HazardIntervalsFromCounts", "hazard", "[user]\ncounts churn[plan=a] interval=1 at_risk=9 events=1\ncounts churn[plan=a] interval=3 at_risk=7 events=1", "[user]\nnothing here",
			`{"target":"churn","entity":["plan"],"contexts":[],"intervals":3}`},
		{"EntitiesDefaults", "entities", specWarmup, specCurrent,
			`{"identity":"freq","scale":"bw","scale_kind":"extent","values":["power","snr"]}`},
		{"EntitiesSigma", "entities", "[user]\ndet pos=1.5 sigma=0.2 level=3", specCurrent,
			`{"identity":"pos","scale":"sigma","scale_kind":"sd","values":["level","freq","bw","power"]}`},
		{"EntitiesBind", "entities", specWarmup, "#bind freq=identity sd=scale power=value\n" + specCurrent,
			`{"identity":"freq","scale":"sd","scale_kind":"sd","values":["power"]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			instruction := adapterInstruction(tt.system, tt.warmup, tt.current)
			if got := roleAnswer(t, hippocam.CallAdapter, user(instruction)); got != tt.want {
				t.Fatalf("bindings\n%s\nwant\n%s", got, tt.want)
			}
			// Asked to repair, in the same message or in a later one, it answers the same.
			repair := instruction + "\n\nYour previous answer was rejected: the dimension name \"shop\" does not occur"
			if got := roleAnswer(t, hippocam.CallAdapter, user(repair)); got != tt.want {
				t.Fatalf("repair in the message: %s", got)
			}
			later := roleAnswer(t, hippocam.CallAdapter, user(instruction), assistant(tt.want), user("Your previous answer was rejected: key: no such dimension\ndet freq=1 power=2"))
			if later != tt.want {
				t.Fatalf("repair in a later message: %s", later)
			}
		})
	}
}

func TestNumericRolesRefuse(t *testing.T) {
	for _, role := range []hippocam.CallRole{hippocam.CallAdapter, hippocam.CallExtractor} {
		for name, instruction := range map[string]string{
			"NoSystemLine":  "Bind the fields.\n\nEvent:\nobs x = 1",
			"UnknownSystem": extractorInstruction("lessons", "{}", "obs x = 1"),
		} {
			t.Run(string(role)+"/"+name, func(t *testing.T) {
				_, err := mustModel(t).Complete(role, chat(system("s"), user(instruction)))
				if hippocam.ErrorCode(err) != hippocam.EINVALID {
					t.Fatalf("error %v, want EINVALID", err)
				}
			})
		}
	}
	_, err := mustModel(t).Complete(hippocam.CallExtractor, chat(user("Memory system: regression (r)\nobs x = 1")))
	if hippocam.ErrorCode(err) != hippocam.EINVALID || !strings.Contains(err.Error(), "Event:") {
		t.Fatalf("an extractor request without an event: %v", err)
	}
}

func TestExtractor(t *testing.T) {
	tests := []struct {
		name, system, bindings, event, want string
	}{
		{"Regression", "regression", `{"target":"sales","key":"store","time":"week","factors":[],"family":"real"}`,
			"[user]\nWeekly sales forecast\n- obs sales[store=north,week=10] = 117.0\nobs sales[week=11,store=north] = 118.40\nobs revenue[store=north,week=11] = 5\n" +
				"estimate sales[store=north,week=12]\nobs sales[store=north,week=9] = about 100\n[feedback]\nfeedback: sales[store=north,week=12] = 119, outcome sales[store=north,week=12] = -0.5e2",
			`{"requested":[{"target":"sales","dims":{"store":"north","week":"12"}}],"outcomes":[` +
				`{"target":"sales","dims":{"store":"north","week":"10"},"value":117.0},` +
				`{"target":"sales","dims":{"store":"north","week":"11"},"value":118.40},` +
				`{"target":"sales","dims":{"store":"north","week":"12"},"value":-0.5e2}]}`},
		{"RegressionNothing", "regression", `{"target":"sales"}`, "[user]\nHello",
			`{"requested":[],"outcomes":[]}`},
		{"Hazard", "hazard", `{"target":"churn","entity":["plan"],"contexts":[],"intervals":3}`,
			"[user]\nChurn\ncounts churn[plan=basic] interval=1 at_risk=200 events=12\n* counts churn[plan=basic] events=9 interval=2 at_risk=188\n" +
				"counts churn[plan=basic] interval=3 at_risk=179\nestimate-curve churn[plan=basic] over 3\n[feedback]\n" +
				"feedback: churn[plan=basic] = [0.9, 0.85, 0.8], outcome churn[plan=basic] = [0.950, 0.9, 0.86]",
			`{"requested":[{"target":"churn","dims":{"plan":"basic"},"intervals":3}],` +
				`"counts":[{"target":"churn","dims":{"plan":"basic"},"interval":1,"at_risk":200,"events":12},` +
				`{"target":"churn","dims":{"plan":"basic"},"interval":2,"at_risk":188,"events":9}],` +
				`"curves":[{"target":"churn","dims":{"plan":"basic"},"values":[0.950,0.9,0.86]}]}`},
		{"Entities", "entities", `{"identity":"freq","scale":"bw","scale_kind":"extent","values":["power"]}`,
			"[user]\nSpectrum scan\ndet freq=103.42 bw=0.20 power=-45.1\n- det freq=250 bw=1.50 power=-60.0\ndet freq=1 bw=x\nestimate-entities power\n[feedback]\nfeedback: 1 of 2 answered entities matched",
			`{"requested":["power"],"detections":[{"freq":103.42,"bw":0.20,"power":-45.1},{"freq":250,"bw":1.50,"power":-60.0}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A line of the instruction before the event is not the event's.
			instruction := strings.Replace(extractorInstruction(tt.system, tt.bindings, tt.event), "Copy", "obs sales[store=north,week=1] = 3\nCopy", 1)
			got := roleAnswer(t, hippocam.CallExtractor, user(instruction))
			if got != tt.want {
				t.Fatalf("batch\n%s\nwant\n%s", got, tt.want)
			}
			if !json.Valid([]byte(got)) {
				t.Fatalf("the batch is not JSON")
			}
			if again := roleAnswer(t, hippocam.CallExtractor, user(instruction+"\n\nYour previous answer was rejected: outcome 1: det freq=2 power=3")); again != got {
				t.Fatalf("repair: %s", again)
			}
		})
	}
}

func TestNumericRolesCallTheirTool(t *testing.T) {
	tool := hippocam.Tool{Name: string(hippocam.CallAdapter), Description: "answer", Parameters: json.RawMessage(`{"type":"object"}`)}
	req := withTools(chat(system("s"), user(adapterInstruction("hazard", churnWarmup, churnCurrent))), tool)
	args := onlyCall(t, complete(t, mustModel(t), hippocam.CallAdapter, req), string(hippocam.CallAdapter))
	if want := `{"target":"churn","entity":["plan","region"],"contexts":[],"intervals":6}`; args != want {
		t.Fatalf("arguments %s, want %s", args, want)
	}
}
