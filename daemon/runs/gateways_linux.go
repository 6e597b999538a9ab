package runs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"

	"benchd.dev/client/apitype"
	"benchd.dev/modelgw"
	"benchd.dev/netns"
)

// gatewaySpec is one of an attempt's gateways: the namespace's side, and
// for an HTTP gateway (NAME=http(s)://...) its upstream.
type gatewaySpec struct {
	ns netns.Gateway
	up *modelgw.Upstream // nil: a raw TCP gateway
}

// parseGateways reads the specs, NAME=HOST:PORT (raw) or
// NAME=http(s)://HOST[:PORT][/PATH] (HTTP), and checks them together as
// the namespace will (netns.CheckGateways); an error wraps ErrInvalid.
func parseGateways(specs []string) ([]gatewaySpec, error) {
	var gws []gatewaySpec
	var nsg []netns.Gateway
	for _, s := range specs {
		var g gatewaySpec
		if modelgw.IsHTTPSpec(s) {
			up, err := modelgw.ParseUpstream(s)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
			}
			// The host's rules and the name's are the namespace's.
			ng, err := netns.ParseGateway(up.Name + "=" + up.HostPort())
			if err != nil {
				return nil, fmt.Errorf("%w: gateway %q: %w", ErrInvalid, s, err)
			}
			ng.ListenPort = up.ListenPort
			g = gatewaySpec{ns: ng, up: &up}
		} else {
			ng, err := netns.ParseGateway(s)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
			}
			g = gatewaySpec{ns: ng}
		}
		gws = append(gws, g)
		nsg = append(nsg, g.ns)
	}
	if _, err := netns.CheckGateways(nsg, agentHostname); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	return gws, nil
}

// baseURLs are the URLs at which the agent reaches each gateway from
// inside the sandbox (a preset's {base_url}): plain HTTP at the
// gateway's host for an HTTP gateway, the port left out when it is 80;
// http://HOST:PORT for a raw one, https:// on port 443 (the agent's TLS
// passes through). An IP literal host is reached at the namespace's
// loopback address for it.
func baseURLs(gws []gatewaySpec) map[string]string {
	nsg := make([]netns.Gateway, len(gws))
	for i, g := range gws {
		nsg[i] = g.ns
	}
	addrs := netns.ListenAddrs(nsg)
	out := map[string]string{}
	for _, g := range gws {
		host := g.ns.Host
		if _, err := netip.ParseAddr(host); err == nil {
			host = addrs[g.ns.Name].Addr().String()
		}
		switch {
		case g.up != nil && g.up.ListenPort == 80:
			out[g.ns.Name] = "http://" + host
		case g.up != nil:
			out[g.ns.Name] = "http://" + net.JoinHostPort(host, strconv.Itoa(g.up.ListenPort))
		case g.ns.Port == 443:
			out[g.ns.Name] = "https://" + net.JoinHostPort(host, "443")
		default:
			out[g.ns.Name] = "http://" + net.JoinHostPort(host, strconv.Itoa(g.ns.Port))
		}
	}
	return out
}

// probeGateways connects to each gateway's endpoint once before the
// attempt: a raw one's by TCP, an HTTP one's by TCP and (https) TLS.
func probeGateways(ctx context.Context, gws []gatewaySpec) error {
	var raw []netns.Gateway
	var ups []modelgw.Upstream
	for _, g := range gws {
		if g.up != nil {
			ups = append(ups, *g.up)
		} else {
			raw = append(raw, g.ns)
		}
	}
	if err := netns.Probe(ctx, raw, gatewayProbeTimeout); err != nil {
		return err
	}
	if err := modelgw.Probe(ctx, ups, nil, gatewayProbeTimeout); err != nil {
		if errors.Is(err, modelgw.ErrUpstream) {
			return fmt.Errorf("%w: %w", netns.ErrUpstream, err)
		}
		return err
	}
	return nil
}

// modelGateways are an attempt's HTTP gateways and their recorder.
type modelGateways struct {
	rec  *modelgw.Recorder
	gws  map[string]*modelgw.Gateway
	once sync.Once
	err  error
}

// startModelGateways makes the recorder in dir and a gateway for each
// HTTP gateway of gws, whose namespace side gets it as its handler.
// nil when the attempt has none.
func (at *attempt) startModelGateways() (*modelGateways, []netns.Gateway, error) {
	nsg := make([]netns.Gateway, len(at.gws))
	var m *modelGateways
	for i, g := range at.gws {
		nsg[i] = g.ns
		if g.up == nil {
			continue
		}
		if m == nil {
			rec, err := modelgw.NewRecorder(modelgw.RecorderConfig{Dir: at.dir, Secrets: at.plan.Env})
			if err != nil {
				return nil, nil, err
			}
			m = &modelGateways{rec: rec, gws: map[string]*modelgw.Gateway{}}
		}
		gw, err := modelgw.New(modelgw.Config{Upstream: *g.up, Recorder: m.rec, Logger: at.log})
		if err != nil {
			m.close()
			return nil, nil, err
		}
		m.gws[g.ns.Name] = gw
		nsg[i].Handler = gw
	}
	return m, nsg, nil
}

// close ends the calls still in progress, recorded as cut by the
// attempt's end, and closes the log; once.
func (m *modelGateways) close() error {
	if m == nil {
		return nil
	}
	m.once.Do(func() {
		for _, g := range m.gws {
			g.Close()
		}
		m.err = m.rec.Close()
	})
	return m.err
}

// wire completes the network record of the HTTP gateways: their kind,
// upstream URL, the dial errors and refusals of the gateway itself.
func (m *modelGateways) wire(n *apitype.Network) {
	for i := range n.Gateways {
		g := &n.Gateways[i]
		gw := m.gateway(g.Name)
		if gw == nil {
			g.Kind = apitype.GatewayTCP
			continue
		}
		g.Kind, g.URL = apitype.GatewayHTTP, gw.Upstream().URL()
		g.DialErrors, g.LastDialError = gw.DialErrors()
		g.Refused += gw.Refused()
	}
}

func (m *modelGateways) gateway(name string) *modelgw.Gateway {
	if m == nil {
		return nil
	}
	return m.gws[name]
}
