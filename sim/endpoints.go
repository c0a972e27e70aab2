package sim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/openai/wire"
)

// The simulation's minor routes, so that clients that look a model up or embed text work
// offline: GET …/models/{id} and POST …/embeddings.

// Embedding sizes: the default, and the most a request's "dimensions" may ask for.
const (
	defaultDimensions = 8
	maxDimensions     = 3072
)

// serveModel is GET …/models/{id}: the one model, in OpenAI's shape, or in Anthropic's for a
// request that names an anthropic-version; 404 in the matching error body for any other id.
func (m *Model) serveModel(w http.ResponseWriter, r *http.Request, id string) {
	anthropicShape := r.Header.Get("Anthropic-Version") != ""
	if id != ModelID {
		if anthropicShape {
			writeAnthropicFailure(w, hippocam.Errorf(hippocam.ENOTFOUND, "model: %s", id))
			return
		}
		code := "model_not_found"
		writeJSON(w, http.StatusNotFound, wire.ErrorResponse{Error: wire.ErrorBody{
			Message: fmt.Sprintf("The model '%s' does not exist", id), Type: "invalid_request_error", Code: &code}})
		return
	}
	if anthropicShape {
		writeJSON(w, http.StatusOK, map[string]string{"type": "model", "id": ModelID, "display_name": "Hippocam simulated model", "created_at": "2025-01-01T00:00:00Z"})
		return
	}
	writeJSON(w, http.StatusOK, modelEntry{ID: ModelID, Object: "model", OwnedBy: "hippocam"})
}

// embeddingRequest is the part of an embeddings request the simulation reads.
type embeddingRequest struct {
	Input          json.RawMessage `json:"input"`
	Model          string          `json:"model"`
	Dimensions     int             `json:"dimensions"`
	EncodingFormat string          `json:"encoding_format"`
}

// serveEmbeddings is POST …/embeddings: one deterministic unit vector per input (a string, an
// array of strings, or token arrays), drawn from a hash of the input, so that the same text
// always gets the same vector; base64 when encoding_format asks for it (as the OpenAI SDKs do
// by default), with the usage counted by the tokenizer. 400 for an input of another shape or
// dimensions out of range.
func (m *Model) serveEmbeddings(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "cannot read the request body: "+err.Error())
		return
	}
	var req embeddingRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "the body is not a valid embeddings request: "+err.Error())
		return
	}
	inputs, ok := embeddingInputs(req.Input)
	if !ok {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "input: must be a non-empty string, array of strings, or array of token arrays")
		return
	}
	dims := req.Dimensions
	if dims == 0 {
		dims = defaultDimensions
	}
	if dims < 1 || dims > maxDimensions {
		writeError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("dimensions: must be between 1 and %d", maxDimensions))
		return
	}
	type datum struct {
		Object    string `json:"object"`
		Index     int    `json:"index"`
		Embedding any    `json:"embedding"`
	}
	data, tokens := make([]datum, len(inputs)), 0
	for i, in := range inputs {
		vec := embed(in, dims)
		tokens += m.tok.Count(in)
		var e any = vec
		if req.EncodingFormat == "base64" {
			b := make([]byte, 4*len(vec))
			for j, f := range vec {
				binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(f))
			}
			e = base64.StdEncoding.EncodeToString(b)
		}
		data[i] = datum{Object: "embedding", Index: i, Embedding: e}
	}
	model := req.Model
	if model == "" {
		model = ModelID
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": model,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens}})
}

// embeddingInputs reads an embeddings input as texts (token arrays as their numbers joined).
func embeddingInputs(raw json.RawMessage) ([]string, bool) {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, one != ""
	}
	var many []json.RawMessage
	if json.Unmarshal(raw, &many) != nil || len(many) == 0 {
		return nil, false
	}
	var ints []int
	if json.Unmarshal(raw, &ints) == nil {
		return []string{fmt.Sprint(ints)}, true
	}
	out := make([]string, len(many))
	for i, item := range many {
		if json.Unmarshal(item, &out[i]) == nil && out[i] != "" {
			continue
		}
		if json.Unmarshal(item, &ints) != nil || len(ints) == 0 {
			return nil, false
		}
		out[i] = fmt.Sprint(ints)
	}
	return out, true
}

// embed draws a unit vector of n numbers from a hash of text.
func embed(text string, n int) []float32 {
	vec := make([]float32, n)
	var norm float64
	for i := range vec {
		sum := sha256.Sum256([]byte(fmt.Sprintf("%d\x00%s", i, strings.TrimSpace(text))))
		v := float64(binary.LittleEndian.Uint32(sum[:4]))/math.MaxUint32*2 - 1
		vec[i] = float32(v)
		norm += v * v
	}
	if norm = math.Sqrt(norm); norm > 0 {
		for i := range vec {
			vec[i] = float32(float64(vec[i]) / norm)
		}
	}
	return vec
}
