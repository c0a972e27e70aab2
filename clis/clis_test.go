package clis_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// agentCLI says how to drive one agent CLI, installed from npm with its defaults, through
// `hippocam serve` in front of the simulated model.
type agentCLI struct {
	// name is the CLI's command, and bin the path of its executable in the harness's
	// node_modules.
	name, bin string
	// serveFlags are the flags of the serve in front of the simulated model.
	serveFlags []string
	// configure writes the CLI's settings for a run in project with home as HOME, pointed at
	// root (Hippocam's address, no path), and returns the environment variables they need.
	configure func(t *testing.T, root, home, project string) []string
	// prompt is the command line and standard input of a non-interactive run that sends text as
	// the user's message; tools says the run must be allowed to run the CLI's shell tool.
	prompt func(text string, tools bool) (args []string, stdin string)
	// resume is the same for a run that continues the last conversation in the project.
	resume func(text string) (args []string, stdin string)
	// shell is the CLI's shell tool, and shellCall the user message that makes the simulated
	// model call it to create made.txt holding "hi" and to print (or return) the directive
	// "!say the tool ran", which makes the model answer "the tool ran" once it reads the result.
	shell, shellCall string
}

// The answers the simulated model gives to the cases' directives.
const (
	oneShotAnswer = "hello from the sim"
	secondAnswer  = "the second answer"
	toolAnswer    = "the tool ran"
)

// claudeCode is Claude Code (`claude -p`) with its default model, pointed at Hippocam's Anthropic
// Messages endpoint by ANTHROPIC_BASE_URL, with its nonessential traffic (telemetry, update
// checks, error reports) off so that it makes no call but the model's.
var claudeCode = agentCLI{
	name:       "claude",
	bin:        ".bin/claude",
	serveFlags: []string{"--upstream-format", "anthropic"},
	configure: func(t *testing.T, root, home, project string) []string {
		return []string{
			"ANTHROPIC_BASE_URL=" + root,
			"ANTHROPIC_API_KEY=sk-ant-hippocam-test",
			"CLAUDE_CONFIG_DIR=" + filepath.Join(home, ".claude"),
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_TELEMETRY=1",
			"DISABLE_AUTOUPDATER=1",
			"DISABLE_ERROR_REPORTING=1",
		}
	},
	prompt: func(text string, tools bool) ([]string, string) {
		if tools {
			return []string{"-p", text, "--allowedTools", "Bash"}, ""
		}
		return []string{"-p", text}, ""
	},
	resume: func(text string) ([]string, string) { return []string{"-p", "--continue", text}, "" },
	shell:  "Bash",
	shellCall: `!call Bash {"command":"echo hi > made.txt && echo '!say ` + toolAnswer +
		`'","description":"Create made.txt"}`,
}

// codex is Codex (`codex exec`) with its default model, through a custom model provider whose
// base URL is Hippocam's Responses endpoint. Its default model runs shell commands only from
// JavaScript in its `exec` tool, a freeform custom tool in the namespace `functions`: the
// simulated model, which sees it as the function functions__exec with one string argument
// "input", calls it by that name. The workspace-write sandbox lets the command write in the
// project.
var codex = agentCLI{
	name: "codex",
	bin:  ".bin/codex",
	configure: func(t *testing.T, root, home, project string) []string {
		dir := filepath.Join(home, ".codex")
		config := fmt.Sprintf(codexConfig, root+"/v1")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"CODEX_HOME=" + dir, "HIPPOCAM_API_KEY=sk-hippocam-test"}
	},
	prompt: func(text string, tools bool) ([]string, string) {
		return []string{"exec", "--skip-git-repo-check", "--sandbox", "workspace-write", text}, ""
	},
	resume: func(text string) ([]string, string) {
		return []string{"exec", "resume", "--last", "--skip-git-repo-check", text}, ""
	},
	shell: "exec",
	shellCall: `!call functions__exec {"input":"await tools.exec_command({cmd: \"echo hi > made.txt\"});\ntext(\"!say ` +
		toolAnswer + `\");"}`,
}

// codexConfig is the config.toml docs/usage.md gives, with the base URL left to fill in.
const codexConfig = `model_provider = "hippocam"
check_for_update_on_startup = false

[model_providers.hippocam]
name = "Hippocam"
base_url = %q
wire_api = "responses"
env_key = "HIPPOCAM_API_KEY"

[analytics]
enabled = false
`

// opencode is opencode (`opencode run`) with a provider in the project's opencode.json that
// speaks Chat Completions to Hippocam, its model catalogue download and updates off. The prompt
// goes through standard input: `opencode run` puts quotes around an argument that holds spaces.
var opencode = agentCLI{
	name: "opencode",
	// The harness installs opencode's linux-x64 build directly (its package.json says why).
	bin: "opencode-linux-x64/bin/opencode",
	configure: func(t *testing.T, root, home, project string) []string {
		config := fmt.Sprintf(opencodeConfig, root+"/v1")
		if err := os.WriteFile(filepath.Join(project, "opencode.json"), []byte(config), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{
			"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
			"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
			"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
			"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
			"OPENCODE_DISABLE_MODELS_FETCH=1",
			"OPENCODE_DISABLE_AUTOUPDATE=1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
			"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
			"OPENCODE_DISABLE_SHARE=1",
		}
	},
	prompt: func(text string, tools bool) ([]string, string) { return []string{"run"}, text + "\n" },
	resume: func(text string) ([]string, string) { return []string{"run", "--continue"}, text + "\n" },
	shell:  "bash",
	shellCall: `!call bash {"command":"echo hi > made.txt && echo '!say ` + toolAnswer +
		`'","description":"Create made.txt"}`,
}

// opencodeConfig is the opencode.json docs/usage.md gives, with the base URL left to fill in.
const opencodeConfig = `{
  "$schema": "https://opencode.ai/config.json",
  "provider": {
    "hippocam": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Hippocam",
      "options": { "baseURL": %q, "apiKey": "sk-hippocam-test" },
      "models": { "hippocam-sim": { "name": "Hippocam (simulated model)" } }
    }
  },
  "model": "hippocam/hippocam-sim"
}
`

// TestClaudeCode drives Claude Code through Hippocam: a one-shot answer, its --continue, and a
// round trip through its Bash tool, each conversation one Hippocam session.
func TestClaudeCode(t *testing.T) { testAgentCLI(t, claudeCode) }

// TestCodex drives Codex through Hippocam: a one-shot answer, its `exec resume --last`, and a
// round trip through its exec tool (JavaScript calling exec_command), each conversation one
// Hippocam session. Codex's default model declares its tools in an `additional_tools` input
// item, not in `tools`: the model is offered them through it, and its call of functions__exec
// must come back as the custom_tool_call Codex runs.
func TestCodex(t *testing.T) { testAgentCLI(t, codex) }

// TestOpencode drives opencode through Hippocam: a one-shot answer, its --continue, and a round
// trip through its bash tool, each conversation one Hippocam session; opencode's title requests
// are sessions of their own, in the conversation's group.
func TestOpencode(t *testing.T) { testAgentCLI(t, opencode) }

// testAgentCLI runs the three cases of a CLI: a one-shot and its continuation (which continues
// the one-shot's conversation, to spare a run of the CLI: each takes seconds to start) through
// one serve, and beside them, through a serve of its own so that the sessions of the two stay
// apart, a tool round trip. The three CLIs' tests run in parallel.
func testAgentCLI(t *testing.T, a agentCLI) {
	t.Parallel()
	bin := mustCLI(t, a.name, a.bin)

	t.Run("Conversation", func(t *testing.T) {
		t.Parallel()
		top := t
		s := startCLIStack(t, a.serveFlags...)
		var oneShot *cliCase
		var session string
		t.Run("OneShot", func(t *testing.T) {
			c := newCLICase(t, top, s, a, bin)
			before := s.sessions(t)
			c.expect(t, oneShotAnswer, c.send(t, "!say "+oneShotAnswer, false))
			session = c.oneConversation(t, before, oneShotAnswer)
			oneShot = c
		})

		t.Run("Continue", func(t *testing.T) {
			if oneShot == nil {
				t.Fatal("the one-shot failed: there is no conversation to continue")
			}
			c := oneShot.next(t)
			before := s.sessions(t)
			args, stdin := a.resume("!say " + secondAnswer)
			c.expect(t, secondAnswer, c.exec(t, args, stdin))
			if id := c.oneConversation(t, before, secondAnswer); id != session {
				c.fail(t, "the continued conversation went to session %s, not %s", id, session)
			}
			var answers []string
			for _, m := range s.expand(t, session) {
				if m.Role == "assistant" {
					answers = append(answers, m.Content)
				}
			}
			if strings.Join(answers, "|") != oneShotAnswer+"|"+secondAnswer {
				c.fail(t, "session %s holds the answers %q, want both turns'", session, answers)
			}
		})
	})

	t.Run("ToolRoundTrip", func(t *testing.T) {
		t.Parallel()
		s := startCLIStack(t, a.serveFlags...)
		c := newCLICase(t, t, s, a, bin)
		before := s.sessions(t)
		c.expect(t, toolAnswer, c.send(t, a.shellCall, true))
		if b, err := os.ReadFile(filepath.Join(c.project, "made.txt")); err != nil || string(b) != "hi\n" {
			c.fail(t, "made.txt holds %q (%v): the %s tool did not run the command", b, err, a.shell)
		}
		id := c.oneConversation(t, before, toolAnswer)
		var called, answered bool
		for _, m := range s.expand(t, id) {
			for _, tc := range m.ToolCalls {
				called = called || tc.Name == a.shell
			}
			answered = answered || (called && m.Role == "tool")
		}
		if !called || !answered {
			c.fail(t, "session %s: %s called %v, its result stored %v", id, a.shell, called, answered)
		}
	})
}

// cliCase is one case of a CLI: its own HOME and project directory, so that a continuation
// finds only the conversation it continues.
type cliCase struct {
	s             *cliStack
	bin           string
	project, home string
	env           []string
	a             agentCLI
	// first is the wireLog index of the case's first exchange; out and errOut the last run's.
	first       int
	out, errOut string
}

// newCLICase makes a case whose directories last as long as the test top (the CLI's test), so
// that a later case may continue its conversation.
func newCLICase(t, top *testing.T, s *cliStack, a agentCLI, bin string) *cliCase {
	t.Helper()
	c := &cliCase{s: s, bin: bin, a: a, project: top.TempDir(), home: top.TempDir(), first: s.wire.len()}
	c.env = cliEnv(c.home, a.configure(t, s.root, c.home, c.project)...)
	return c
}

// next is a case that runs in c's HOME and project (c's conversation is the last there), with
// its own report of the CLI's requests.
func (c *cliCase) next(t *testing.T) *cliCase {
	n := *c
	n.first, n.out, n.errOut = c.s.wire.len(), "", ""
	return &n
}

// send runs the CLI with text as a new conversation's user message and returns its stdout.
func (c *cliCase) send(t *testing.T, text string, tools bool) string {
	t.Helper()
	args, stdin := c.a.prompt(text, tools)
	return c.exec(t, args, stdin)
}

// exec runs the CLI and returns its stdout; a failed run fails the test.
func (c *cliCase) exec(t *testing.T, args []string, stdin string) string {
	t.Helper()
	var err error
	c.out, c.errOut, err = cliRun{bin: c.bin, args: args, dir: c.project, env: c.env, stdin: stdin}.run()
	if err != nil {
		c.fail(t, "%s %s: %v", c.a.name, strings.Join(args, " "), err)
	}
	return c.out
}

// expect fails the test unless the CLI printed the simulated model's answer.
func (c *cliCase) expect(t *testing.T, answer, out string) {
	t.Helper()
	if !strings.Contains(out, answer) {
		c.fail(t, "%s printed no %q", c.a.name, answer)
	}
}

// oneConversation checks that the case's run stayed one Hippocam session and returns it.
func (c *cliCase) oneConversation(t *testing.T, before map[string]sessionRow, answer string) string {
	t.Helper()
	id, sides, err := c.s.conversation(t, before, answer)
	if err != nil {
		c.fail(t, "%v", err)
	}
	if len(sides) > 0 {
		t.Logf("%s: side requests made %d sessions of their own: %q", c.a.name, len(sides), sides)
	}
	return id
}

// fail fails the test with what the CLI printed and every exchange it had with Hippocam.
func (c *cliCase) fail(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s\n%s's requests to Hippocam:\n%sstdout:\n%s\nstderr:\n%s\nhippocam serve's log (end):\n%s",
		fmt.Sprintf(format, args...), c.a.name, c.s.wire.summary(c.first), clip(c.out, 3000),
		tail(c.errOut, 3000), tail(c.s.serve.log.String(), 3000))
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
