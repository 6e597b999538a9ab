package e2e

import (
	"archive/tar"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"path"
	"strings"
	"sync"
	"testing"

	"benchd.dev/client/apitype"
)

// deadPort is a loopback port that was listened on and closed: a model
// gateway with nothing behind it.
func deadPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := int(netip.MustParseAddrPort(ln.Addr().String()).Port())
	ln.Close()
	return port
}

// echoOn serves an echo on ln until the test ends.
func echoOn(t *testing.T, ln net.Listener) {
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { io.Copy(c, c); c.Close() })
		}
	})
	t.Cleanup(func() { ln.Close(); wg.Wait() })
}

// chain follows attempt id's retries to the end of its chain.
func chain(t *testing.T, d *daemonProc, id string) []apitype.Attempt {
	t.Helper()
	var out []apitype.Attempt
	for id != "" {
		a := wait(t, d.client, id)
		out = append(out, a)
		id = a.RetriedBy
		if len(out) > 10 {
			t.Fatalf("a chain of more than 10 retries from %s", out[0].ID)
		}
	}
	return out
}

// TestDeadGateway: a gateway with nothing listening behind it is found
// before the agent starts: the attempt is an infra error that names the
// gateway, its endpoint and the dial error, with nothing run, and the
// shared benchd (--retries 1 by default) retries it once, linked.
func TestDeadGateway(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	port := deadPort(t)
	endpoint := fmt.Sprintf("127.0.0.1:%d", port)
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: "sleep 3600", Gateways: []string{"model=" + endpoint}})
	if err != nil {
		t.Fatal(err)
	}
	as := chain(t, d, run.Attempts[0])
	if len(as) != 2 {
		t.Fatalf("got a chain of %d attempts, want the attempt and one retry", len(as))
	}
	for i, a := range as {
		if a.State != apitype.StateInfraError || a.HasVerdict() {
			t.Errorf("attempt %d: got state %s, want infra_error without a verdict", i, a.State)
		}
		for _, w := range []string{"gateway model", endpoint, "connection refused"} {
			if !strings.Contains(a.InfraError, w) {
				t.Errorf("attempt %d: got infra error %q, want it to say %q", i, a.InfraError, w)
			}
		}
		if a.HasAgentEnd() || a.JournalHead != "" {
			t.Errorf("attempt %d: got exit %d, journal head %q: want no agent run, no journal (the probe comes first)", i, a.ExitCode, a.JournalHead)
		}
	}
	for _, a := range as {
		if a.Finished != nil {
			t.Logf("%s: created to finished %v", a.ID, a.Finished.Sub(a.Created))
		}
	}
	if as[0].RetryOf != "" || as[1].RetryOf != as[0].ID || as[0].RetriedBy != as[1].ID {
		t.Errorf("links: got %s retry_of %q retried_by %q, %s retry_of %q; want a chain", as[0].ID, as[0].RetryOf, as[0].RetriedBy, as[1].ID, as[1].RetryOf)
	}
	got, err := d.client.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Attempts) != 2 || got.Attempts[1] != as[1].ID {
		t.Errorf("run's attempts: got %v, want %s then its retry %s", got.Attempts, as[0].ID, as[1].ID)
	}
	out, code := runBenchctl(t, nil, "show", as[0].ID)
	if code != 2 || !strings.Contains(out, "retried by") || !strings.Contains(out, as[1].ID) {
		t.Errorf("show %s: exit %d, want 2 (an infra error) and it to name its retry %s:\n%s", as[0].ID, code, as[1].ID, out)
	}
}

// TestRetryLandsOneVerdict: an infra error retried with benchctl retry
// once its gateway answers lands exactly one graded attempt in the run's
// slot; retrying again has nothing to retry (exit 1), and the store
// refuses a retry of the graded attempt.
func TestRetryLandsOneVerdict(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	port := deadPort(t)
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: apitype.AgentReference,
		Gateways: []string{fmt.Sprintf("model=127.0.0.1:%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	first := chain(t, d, run.Attempts[0]) // the attempt and its automatic retry
	last := first[len(first)-1]
	if last.State != apitype.StateInfraError {
		t.Fatalf("got %s, want infra_error", last.State)
	}
	// Now something answers behind the gateway.
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatalf("listening again on the dead port: %v", err)
	}
	echoOn(t, ln)

	out, code := runBenchctl(t, nil, "retry", "--json", run.ID)
	if code != 0 {
		t.Fatalf("retry: exit %d: %s", code, out)
	}
	var r apitype.Retry
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("retry --json: %v\n%s", err, out)
	}
	if len(r.Retried) != 1 || r.Retried[0].Of != last.ID {
		t.Fatalf("retry: got %+v, want one retry of %s", r, last.ID)
	}
	graded := wait(t, d.client, r.Retried[0].Attempt)
	if graded.State != apitype.StateDone || !graded.Pass || graded.RetryOf != last.ID {
		t.Errorf("the retry: got state %s pass %v retry_of %q (%s), want a pass retrying %s", graded.State, graded.Pass, graded.RetryOf, graded.InfraError, last.ID)
	}

	out, code = runBenchctl(t, nil, "retry", run.ID)
	if code != 1 || !strings.Contains(out, "nothing to retry") {
		t.Errorf("second retry: got exit %d %q, want exit 1 saying nothing to retry", code, out)
	}
	got, err := d.client.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := 0
	for _, id := range got.Attempts {
		a, err := d.client.Attempt(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if a.HasVerdict() {
			verdicts++
		}
		if a.State == apitype.StateInfraError && a.RetriedBy == "" {
			t.Errorf("%s: an infra error left unretried in a slot that has a verdict", a.ID)
		}
	}
	if len(got.Attempts) != len(first)+1 || verdicts != 1 {
		t.Errorf("run %s: got %d attempts with %d verdicts, want %d with 1", run.ID, len(got.Attempts), verdicts, len(first)+1)
	}
	// The retry's signed statement names the attempt it retries.
	ar, err := d.client.Export(ctx, graded.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Close()
	tr := tar.NewReader(ar)
	for {
		h, err := tr.Next()
		if err != nil {
			t.Fatalf("export of %s: no attempt.dsse.json: %v", graded.ID, err)
		}
		if path.Base(h.Name) != "attempt.dsse.json" {
			continue
		}
		var env struct {
			Payload []byte `json:"payload"` // base64 in JSON
		}
		var st apitype.Statement
		if err := json.NewDecoder(tr).Decode(&env); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(env.Payload, &st); err != nil {
			t.Fatal(err)
		}
		if st.RetryOf != last.ID {
			t.Errorf("signed statement of %s: got retry_of %q, want %s", graded.ID, st.RetryOf, last.ID)
		}
		break
	}
}

// TestUpstreamDiesDuringAttempt: the gateway's endpoint answers the
// probe, then nothing does: the agent's connection fails to dial, and the
// attempt is an infra error that says so, its journal and network report
// kept, not a FAIL.
func TestUpstreamDiesDuringAttempt(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := int(netip.MustParseAddrPort(ln.Addr().String()).Port())
	probed := make(chan struct{})
	go func() {
		defer close(probed)
		if c, err := ln.Accept(); err == nil { // the probe
			c.Close()
		}
		ln.Close()
	}()
	t.Cleanup(func() { ln.Close(); <-probed })
	// Inside, the IP-literal gateway listens on 127.0.1.1, same port.
	agent := fmt.Sprintf(`python3 -c 'import socket
s = socket.create_connection(("127.0.1.1", %d))
s.recv(1)
open("/workspace/src/counter.py", "a").write("# touched\n")'`, port)
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: agent, Gateways: []string{fmt.Sprintf("model=127.0.0.1:%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	as := chain(t, d, run.Attempts[0])
	a := as[0]
	if a.State != apitype.StateInfraError || a.HasVerdict() {
		t.Fatalf("got state %s (%s), want infra_error without a verdict", a.State, a.InfraError)
	}
	for _, w := range []string{"gateway model", "failed dial", "connection refused"} {
		if !strings.Contains(a.InfraError, w) {
			t.Errorf("got infra error %q, want it to say %q", a.InfraError, w)
		}
	}
	if len(a.Network.Gateways) != 1 || a.Network.Gateways[0].DialErrors < 1 || !strings.Contains(a.Network.Gateways[0].LastDialError, "refused") {
		t.Errorf("network: got %+v, want the gateway's dial error counted", a.Network.Gateways)
	}
	if a.JournalHead == "" {
		t.Errorf("got no journal head, want the journal kept")
	}
	out, code := runBenchctl(t, nil, "log", a.ID)
	if code != 0 || !strings.Contains(out, "src/counter.py") {
		t.Errorf("log %s: exit %d, want the agent's write in the journal:\n%s", a.ID, code, out)
	}
	// The retry meets the dead endpoint at its probe.
	if len(as) != 2 || !strings.Contains(as[1].InfraError, "unable to reach") {
		t.Errorf("got chain %d long, retry's infra error %q; want a retry stopped at the probe", len(as), as[len(as)-1].InfraError)
	}
}

// TestGatewayFloodIsNoInfraError is a hostile agent: it opens far more
// connections to its gateway than the gateway takes, holds them, then
// churns, hoping to make the gateway's dials fail and its attempt pass
// for the harness's failure. It gets a verdict, and the excess shows as
// refused connections, not as dial errors.
func TestGatewayFloodIsNoInfraError(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echoOn(t, ln)
	port := int(netip.MustParseAddrPort(ln.Addr().String()).Port())
	agent := fmt.Sprintf(`python3 -c 'import socket
addr = ("127.0.1.1", %d)
held = []
for i in range(400):
    try:
        held.append(socket.create_connection(addr))
    except OSError:
        pass
for s in held:
    s.close()
for i in range(400):
    try:
        socket.create_connection(addr).close()
    except OSError:
        pass'`, port)
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: agent, Gateways: []string{fmt.Sprintf("model=127.0.0.1:%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	a := wait(t, d.client, run.Attempts[0])
	if a.State != apitype.StateDone || a.RetriedBy != "" {
		t.Fatalf("got state %s (%s), retried by %q; want a verdict, not retried", a.State, a.InfraError, a.RetriedBy)
	}
	if len(a.Network.Gateways) != 1 {
		t.Fatalf("network: got %+v, want one gateway", a.Network.Gateways)
	}
	g := a.Network.Gateways[0]
	if g.DialErrors != 0 || g.Refused == 0 || g.Conns == 0 {
		t.Errorf("gateway: got %d conns, %d refused, %d dial errors; want some served, some refused, no dial error", g.Conns, g.Refused, g.DialErrors)
	}
}

// TestRetryWithoutEnvValues: an infra error of an attempt given --env
// variables is retried automatically (the values are still in memory),
// but benchctl retry cannot retry it later, since benchd never keeps the
// values: it says so and exits 1, and queues nothing.
func TestRetryWithoutEnvValues(t *testing.T) {
	d := shared(t)
	ctx := context.Background()
	port := deadPort(t)
	run, err := d.client.CreateRun(ctx, apitype.RunRequest{Task: "rt-01", Agent: "sleep 3600",
		Env: []apitype.EnvVar{{Name: "MODEL_KEY", Value: "sk-not-kept"}}, Gateways: []string{fmt.Sprintf("model=127.0.0.1:%d", port)}})
	if err != nil {
		t.Fatal(err)
	}
	as := chain(t, d, run.Attempts[0])
	if len(as) != 2 || as[1].State != apitype.StateInfraError {
		t.Fatalf("got a chain of %d, want the attempt and its automatic retry, both infra errors", len(as))
	}
	out, code := runBenchctl(t, nil, "retry", run.ID)
	if code != 1 || !strings.Contains(out, "MODEL_KEY") || !strings.Contains(out, "nothing could be retried") {
		t.Errorf("retry: got exit %d %q, want exit 1 naming MODEL_KEY", code, out)
	}
	if strings.Contains(out, "sk-not-kept") {
		t.Errorf("retry's message shows the variable's value: %q", out)
	}
	got, err := d.client.Run(ctx, run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Attempts) != 2 {
		t.Errorf("run's attempts after a refused retry: got %v, want 2", got.Attempts)
	}
}
