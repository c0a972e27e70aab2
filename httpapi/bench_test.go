package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/hippocam/hippocam/openai/wire"
)

// BenchmarkProxyOverhead measures, side by side in one run, the latency of a chat request sent
// through Hippocam and through a bare httputil.ReverseProxy to the same simulated upstream
// (which answers at once), for sessions of the given number of messages. Hippocam's figure
// includes its JANUS call (to the same simulated model), the engine step and the durable SQLite
// commit; the bare proxy forwards one call. Reported: p50 and p99 of each, in milliseconds.
func BenchmarkProxyOverhead(b *testing.B) {
	for _, size := range []int{100, 1000} {
		b.Run(fmt.Sprintf("messages=%d", size), func(b *testing.B) {
			s := newServer(b, 1_000_000, nil)
			target, _ := url.Parse(s.up.URL)
			bare := httptest.NewServer(httputil.NewSingleHostReverseProxy(target))
			defer bare.Close()
			var history []wire.ChatMessage
			post := func(base string, msgs []wire.ChatMessage) (wire.ChatMessage, time.Duration) {
				body, _ := json.Marshal(wire.ChatRequest{Model: "m", Messages: msgs})
				req, _ := http.NewRequest("POST", base+"/v1/chat/completions", bytes.NewReader(body))
				req.Header.Set("Hippocam-Session", "bench")
				t0 := time.Now()
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				data, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				d := time.Since(t0)
				var out wire.ChatResponse
				if resp.StatusCode != 200 || json.Unmarshal(data, &out) != nil || len(out.Choices) == 0 {
					b.Fatalf("status %d: %s", resp.StatusCode, data)
				}
				return out.Choices[0].Message, d
			}
			user := func(i int) wire.ChatMessage {
				return wire.ChatMessage{Role: "user", Content: wire.StringContent(fmt.Sprintf("note_%d := value %d\n!say noted %d", i, i, i))}
			}
			for len(history) < size { // grow the session through the proxy
				history = append(history, user(len(history)))
				answer, _ := post(s.URL, history)
				history = append(history, answer)
			}
			var viaHippocam, viaBare []time.Duration
			i := 0
			for b.Loop() {
				msgs := append(history, user(size+i))
				if i%2 == 0 {
					_, d := post(bare.URL, msgs)
					viaBare = append(viaBare, d)
				}
				answer, d := post(s.URL, msgs)
				viaHippocam = append(viaHippocam, d)
				if i%2 == 1 {
					_, d := post(bare.URL, msgs)
					viaBare = append(viaBare, d)
				}
				history = append(msgs, answer)
				i++
			}
			b.ReportMetric(pct(viaHippocam, 0.50), "hippocam-p50-ms")
			b.ReportMetric(pct(viaHippocam, 0.99), "hippocam-p99-ms")
			b.ReportMetric(pct(viaBare, 0.50), "bare-p50-ms")
			b.ReportMetric(pct(viaBare, 0.99), "bare-p99-ms")
		})
	}
}

func pct(ds []time.Duration, q float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(s[int(q*float64(len(s)-1))].Microseconds()) / 1000
}
