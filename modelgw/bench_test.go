package modelgw

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// BenchmarkOverhead measures a Chat Completions call (streamed, from the
// scripted model server) through the gateway against the same call
// straight to the server, in the same run, and reports the ratio and the
// added time per call.
func BenchmarkOverhead(b *testing.B) {
	up := upstream(&testing.T{}, fixScript, false)
	defer up.Close()
	t := &testing.T{}
	tg := newGateway(t, up.URL, nil)
	defer tg.close()
	path, body := request("chat", true)
	call := func(base string) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	measure := func(base string) time.Duration {
		start := time.Now()
		for range b.N {
			call(base)
		}
		return time.Since(start) / time.Duration(b.N)
	}
	call(up.URL)
	call(tg.url)
	b.ResetTimer()
	direct := measure(up.URL)
	proxied := measure(tg.url)
	b.ReportMetric(float64(direct.Microseconds()), "direct-us/call")
	b.ReportMetric(float64(proxied.Microseconds()), "gateway-us/call")
	b.ReportMetric(float64(proxied)/float64(direct), "ratio")
}
