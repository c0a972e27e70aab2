package sim_test

import (
	"testing"

	"github.com/hippocam/hippocam"
)

// The router's rules are tested through learn.Route (learn/router_test.go); here, the framing.
func TestRouterFraming(t *testing.T) {
	m := mustModel(t)
	for name, req := range map[string][]string{
		"NoMarker":    {"Route this task, please."},
		"BadJSON":     {"Routing input, as JSON:\n{not json"},
		"NotLastUser": {"Routing input, as JSON:\n{}", ""},
	} {
		t.Run(name, func(t *testing.T) {
			msgs := append(chat(system("You route tasks.")).Messages, user(req[0]))
			if len(req) > 1 {
				msgs = append(msgs, assistant("ok"))
			}
			_, err := m.Complete(hippocam.CallRouter, chat(msgs...))
			if hippocam.ErrorCode(err) != hippocam.EINVALID {
				t.Errorf("error %v, want EINVALID", err)
			}
		})
	}
}
