package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hippocam/hippocam"
	"github.com/hippocam/hippocam/engine"
	"github.com/hippocam/hippocam/inmem"
	"github.com/hippocam/hippocam/tokenizer"
)

// noModel is a model no request of these tests reaches.
type noModel struct{}

func (noModel) Complete(context.Context, *hippocam.Request) (*hippocam.Response, error) {
	return nil, hippocam.Errorf(hippocam.EUNAVAILABLE, "no model in this test")
}

// newFormatsServer is a server with one tenant key ("k") and metrics, whose requests never
// reach a model.
func newFormatsServer(t *testing.T) *Server {
	t.Helper()
	e, err := engine.New(engine.ForWindow(4000), noModel{}, tokenizer.MustDefault(), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Engine: e, Store: inmem.New(), Keys: map[string]string{"k": "t"}, Metrics: NewMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// shapeOf is the shape of an error body: its top-level keys, then those of its "error" object.
func shapeOf(t *testing.T, body []byte) string {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		t.Fatalf("error body is not a JSON object: %v: %s", err, body)
	}
	var inner map[string]json.RawMessage
	_ = json.Unmarshal(top["error"], &inner)
	keys := func(m map[string]json.RawMessage) string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return strings.Join(ks, ",")
	}
	return keys(top) + " / " + keys(inner)
}

// wantShape is the shape of in's error JSON, as its writeRefusal writes it.
func wantShape(t *testing.T, in inboundFormat) string {
	t.Helper()
	rec := httptest.NewRecorder()
	refuse(in.id(), hippocam.Errorf(hippocam.EINVALID, "x")).write(rec, in.id())
	return shapeOf(t, rec.Body.Bytes())
}

// concrete is a request path for a route's path pattern: each wildcard is "x".
func concrete(pattern string) string {
	return regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(pattern, "x")
}

// Every format of the registry is served and answers failures in its own error JSON: each of
// its routes reaches its pattern, under its metrics name; a request without a key is a 401, a
// route's wrong method a 405, an unknown path under its prefix a 404, and a bad request that
// reaches the handler a 4xx, each in the format's error JSON and counted under the route. A
// format added to inboundFormats is checked here with nothing more to write.
func TestInboundFormats(t *testing.T) {
	s := newFormatsServer(t)
	do := func(method, path string, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(""))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	ids := map[hippocam.Format]bool{}
	names := map[string]bool{}
	for _, in := range inboundFormats {
		t.Run(string(in.id()), func(t *testing.T) {
			if in.id() == "" || ids[in.id()] {
				t.Fatalf("format id %q is empty or taken", in.id())
			}
			ids[in.id()] = true
			if inboundOf(in.id()) != in {
				t.Fatalf("inboundOf(%q) is not the registry's entry", in.id())
			}
			if len(in.routes()) == 0 || len(in.prefixes()) == 0 {
				t.Fatal("a format needs routes and a path prefix")
			}
			shape := wantShape(t, in)
			for _, rt := range in.routes() {
				method, pattern, ok := strings.Cut(rt.pattern, " ")
				if !ok || rt.name == "" || rt.handler == nil {
					t.Fatalf("route %+v: a pattern with its method, a name and a handler are needed", rt)
				}
				if names[rt.name] {
					t.Errorf("route name %q is taken", rt.name)
				}
				names[rt.name] = true
				path := concrete(pattern)
				if _, served := s.mux.Handler(httptest.NewRequest(method, path, nil)); served != rt.pattern {
					t.Errorf("%s %s is served by %q, want %q", method, path, served, rt.pattern)
				}
				if f := formatOf(path); f != in.id() {
					t.Errorf("%s is under no prefix of %s (it belongs to %s)", path, in.id(), f)
				}

				rec := do(method, path)
				if rec.Code != http.StatusUnauthorized || shapeOf(t, rec.Body.Bytes()) != shape {
					t.Errorf("%s %s without a key: %d %s; want 401 in the shape %s", method, path, rec.Code, rec.Body, shape)
				}
				keys := [][]string{{"Authorization", "Bearer k"}}
				if h := in.keyHeader(); h != "" {
					keys = append(keys, []string{h, "k"})
				}
				for _, key := range keys {
					rec := do(method, path, key...)
					code := rec.Code
					if code == http.StatusUnauthorized {
						t.Errorf("%s %s with %s: 401", method, path, key[0])
					}
					if code >= 400 && shapeOf(t, rec.Body.Bytes()) != shape {
						t.Errorf("%s %s with %s: %d %s; want the shape %s", method, path, key[0], code, rec.Body, shape)
					}
				}
				if !strings.Contains(pattern, "{") {
					other := http.MethodGet
					if method == http.MethodGet {
						other = http.MethodPost
					}
					rec := do(other, path, "Authorization", "Bearer k")
					if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != method || shapeOf(t, rec.Body.Bytes()) != shape {
						t.Errorf("%s %s: %d (Allow %q) %s; want 405 allowing %s in the shape %s", other, path, rec.Code, rec.Header().Get("Allow"), rec.Body, method, shape)
					}
				}
			}
			for _, p := range in.prefixes() {
				path := strings.TrimSuffix(p, "/") + "/no/such/route"
				rec := do(http.MethodPost, path, "Authorization", "Bearer k")
				if rec.Code != http.StatusNotFound || shapeOf(t, rec.Body.Bytes()) != shape {
					t.Errorf("POST %s: %d %s; want 404 in the shape %s", path, rec.Code, rec.Body, shape)
				}
			}
		})
	}

	// Every route's requests were counted under its name.
	rec := do(http.MethodGet, "/metrics", "Authorization", "Bearer k")
	b, _ := io.ReadAll(rec.Body)
	for name := range names {
		if !strings.Contains(string(b), `hippocam_http_requests_total{code="401",route="`+name+`"}`) {
			t.Errorf("no request counted under route %q", name)
		}
	}
}

// The formats' refusals differ where their providers' do: a context too long in each format's
// words, an overloaded upstream as Anthropic's 529 only in the Messages format, and every
// refusal written as the format's own error JSON.
func TestInboundFormatRefusals(t *testing.T) {
	for _, in := range inboundFormats {
		r := refuse(in.id(), hippocam.Capacityf(9000, 8000, "too long"))
		if r.status != http.StatusBadRequest || r.cause != causeCapacity || r.message == "" {
			t.Errorf("%s: a context too long is %+v", in.id(), r)
		}
		rec := httptest.NewRecorder()
		r.write(rec, in.id())
		var body any
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != r.status || !holds(body, r.message) {
			t.Errorf("%s: written as %d %s; want %d with %q", in.id(), rec.Code, rec.Body, r.status, r.message)
		}
	}
}

// holds reports whether the decoded JSON v has the string s somewhere.
func holds(v any, s string) bool {
	switch v := v.(type) {
	case string:
		return v == s
	case map[string]any:
		for _, e := range v {
			if holds(e, s) {
				return true
			}
		}
	case []any:
		for _, e := range v {
			if holds(e, s) {
				return true
			}
		}
	}
	return false
}
