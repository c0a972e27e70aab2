package sim_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"strings"
	"testing"

	"github.com/hippocam/hippocam/sim"
	"github.com/hippocam/hippocam/tokenizer"
)

// GET …/models/{id} describes the one model in the shape of the client's format; another id is
// a 404 in that format's error body.
func TestModelByID(t *testing.T) {
	e := endpoints(t, sim.New(tokenizer.MustDefault()))["Server"]
	for _, tc := range []struct {
		name, id, version string
		status            int
		want              string
	}{
		{"OKOpenAI", sim.ModelID, "", 200, `"object":"model"`},
		{"OKAnthropic", sim.ModelID, "2023-06-01", 200, `"type":"model"`},
		{"ErrOpenAI", "gpt-x", "", 404, `"code":"model_not_found"`},
		{"ErrAnthropic", "claude-x", "2023-06-01", 404, `"type":"not_found_error"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodGet, e.base+"/models/"+tc.id, nil)
			if tc.version != "" {
				req.Header.Set("Anthropic-Version", tc.version)
			}
			status, body := e.do(t, req)
			if status != tc.status || !strings.Contains(string(body), tc.want) {
				t.Fatalf("%d %s, want %d with %s", status, body, tc.status, tc.want)
			}
		})
	}
}

// POST …/embeddings answers one unit vector per input, the same for the same text, as floats
// or base64; other inputs get a 400.
func TestEmbeddings(t *testing.T) {
	e := endpoints(t, sim.New(tokenizer.MustDefault()))["Transport"]
	type reply struct {
		Data []struct {
			Index     int             `json:"index"`
			Embedding json.RawMessage `json:"embedding"`
		} `json:"data"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	read := func(body string) ([][]float32, reply) {
		t.Helper()
		status, b := e.post(t, "/embeddings", "", []byte(body))
		var r reply
		if status != 200 || json.Unmarshal(b, &r) != nil {
			t.Fatalf("%s: %d %s", body, status, b)
		}
		var out [][]float32
		for _, d := range r.Data {
			var v []float32
			if json.Unmarshal(d.Embedding, &v) != nil {
				var s string
				json.Unmarshal(d.Embedding, &s)
				raw, _ := base64.StdEncoding.DecodeString(s)
				v = make([]float32, len(raw)/4)
				for i := range v {
					v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
				}
			}
			out = append(out, v)
		}
		return out, r
	}
	one, r := read(`{"model":"m","input":"hello world"}`)
	two, _ := read(`{"model":"m","input":["hello world","another"],"encoding_format":"base64","dimensions":16}`)
	if len(one) != 1 || len(one[0]) != 8 || r.Usage.PromptTokens == 0 || len(two) != 2 || len(two[0]) != 16 {
		t.Fatalf("sizes: %d×%d, %d×%d", len(one), len(one[0]), len(two), len(two[0]))
	}
	again, _ := read(`{"model":"m","input":["hello world"]}`)
	for i := range one[0] {
		if one[0][i] != again[0][i] {
			t.Fatal("the same text got another vector")
		}
	}
	var norm float32
	for _, f := range two[1] {
		norm += f * f
	}
	if norm < 0.99 || norm > 1.01 {
		t.Fatalf("norm² %v, want 1", norm)
	}
	for _, bad := range []string{`{"input":""}`, `{"input":[]}`, `{"input":{"a":1}}`, `{"input":"x","dimensions":99999}`} {
		if status, b := e.post(t, "/embeddings", "", []byte(bad)); status != 400 {
			t.Errorf("%s: %d %s, want 400", bad, status, b)
		}
	}
}
