// Package modelgw is the model's side of an attempt: an HTTP gateway
// that proxies the agent's calls to a model API and records each one,
// the parsing of the three APIs the presets speak (OpenAI Responses,
// OpenAI Chat Completions, Anthropic Messages; whole JSON bodies and
// server-sent event streams), and the price table that turns their
// tokens into dollars. It is pure Go: it knows nothing of namespaces.
// package netns serves a Gateway (an http.Handler) on the gateway's
// address inside the attempt's namespace, and daemon/runs puts the two
// together.
//
// # Gateways
//
// A gateway is written NAME=http://HOST[:PORT][/PATH] or
// NAME=https://HOST[:PORT][/PATH] (ParseUpstream); NAME=HOST:PORT stays
// netns's raw TCP gateway, for endpoints this package does not speak.
// Inside the namespace the gateway serves plain HTTP at HOST (a name the
// namespace maps to 127.0.1.N; an IP literal is served at 127.0.1.N
// itself) on PORT when the URL names one, else on port 80
// (DefaultListenPort): the agent's base URL is http://HOST[:PORT], and a
// request for /X goes to the upstream's PATH/X over HTTP or HTTPS (the
// certificate verified against the host's roots), dialed from the host's
// namespace.
//
// # What reaches the upstream
//
// The agent's requests are not trusted. A request is forwarded only to
// the gateway's upstream, re-framed by this package (Go's HTTP client
// writes its own request line, Host and Content-Length from the parsed
// request), so nothing the agent sends can address another host or
// smuggle a second request on the upstream connection. The gateway
// answers itself, without forwarding, and records as refused:
// CONNECT; a request URI not in origin form (absolute-form, "*");
// a protocol upgrade (Upgrade or Connection: upgrade); a path with a
// "." or ".." segment, a backslash, a NUL or an encoded slash; a body of
// more than MaxRequestBytes; a body that would take the bodies in flight
// past MaxPendingBytes; and, past MaxCalls in the attempt, any request
// (429, counted but not recorded). Hop-by-hop headers (those of RFC 9110
// and those Connection names) are dropped both ways, the agent's Host is
// replaced by the upstream's, and Accept-Encoding is set to identity so
// that the recorder reads plain bodies. Go's HTTP server, which parses
// the agent's requests, refuses a message with conflicting
// Content-Length headers and reads Transfer-Encoding: chunked over
// Content-Length.
//
// Responses reach the agent as they arrive: each read from the upstream
// is written and flushed at once, so a stream (SSE) is never held back.
// A response the upstream cuts short, or that is cut by the attempt's
// end, ends the agent's connection without the response's end, so that
// the agent cannot take it for a whole one.
//
// # Bounds
//
// netns bounds the agent's connections to the gateway
// (netns.MaxGatewayConns, the rest refused and counted). Dials to the
// upstream (TCP and, for https, the TLS handshake) are at most MaxDials
// at once, each within 30 s and bound to the gateway's life rather than
// to the request that caused it, and the upstream connections at most
// MaxUpstreamConns: no number of requests the agent makes turns into a
// failed dial. A failed dial while the gateway is open is the
// upstream's failure (DialErrors), which daemon/runs turns into an infra
// error, as for a raw gateway. Probe connects once before the attempt.
//
// # Records
//
// Each call is an apitype.ModelCall in the attempt's work directory
// (Recorder): a line in model.jsonl when it starts (Error "in progress")
// and another when it ends; the request as forwarded and the response
// as received are stored as HTTP/1.1 text in model/SEQ.request and
// model/SEQ.response, with their SHA-256 in the call. The request is on
// disk before the upstream sees it. ReadLog reads the log after the
// attempt, or after a crash of benchd, when a call that only started
// ends as cut short.
//
// Secrets never reach the files: the values of credential headers
// (Authorization, Proxy-Authorization, x-api-key, api-key, cookies, and
// any header whose name holds key, token, secret, auth, cookie, session,
// password, credential or signature) are replaced by [redacted], and the
// attempt's --env values are scrubbed (package scrub) from the stored
// messages and from every text of the call.
//
// # Caps
//
// A stored message is cut at MaxMessageBytes (8 MiB), and an attempt's
// stored messages at MaxStoredBytes (128 MiB) in all; a call whose
// request or response was cut has Truncated set. The call's sizes,
// usage and tool calls are those of the whole bodies: a stream is parsed
// as it passes, and a whole JSON body is kept up to 16 MiB for parsing.
// The text and each tool call's arguments are kept to
// apitype.MaxModelText bytes.
//
// # Usage
//
// The upstream's responses are the provider's account of the call and
// are trusted for its usage; usage is read from the places each API puts
// it and nowhere else (never from the request, which is the agent's, and
// never from text the model wrote): the usage object of a whole body;
// in a stream, the Responses API's response.completed (or .incomplete,
// .failed), Chat Completions' last chunk with usage (present only when
// the request asked for it with stream_options.include_usage: a call
// without it counts as unreported), and Anthropic's message_start
// usage with message_delta's cumulative counts laid over it. Usage is
// normalized as apitype.TokenUsage says. The model recorded is the one
// the response names, else the one the request asked for.
//
// # Prices
//
// A price table (LoadPrices; benchd --prices FILE, DefaultPricesFile
// when present) is TOML:
//
//	[models."gpt-5-codex"]
//	input = 1.25          # USD per million input tokens
//	cached_input = 0.125  # read from the cache (default: input)
//	cache_write = 1.25    # written to the cache (default: input)
//	output = 10.0         # USD per million output tokens, reasoning included
//
//	[models."claude-sonnet-4-5*"]   # a prefix: every model it starts
//	input = 3.0
//	output = 15.0
//
// Usage applies it when the attempt ends: the calls whose model it lists
// make CostUSD, the calls with usage whose model it does not list count
// in Unpriced.
package modelgw
