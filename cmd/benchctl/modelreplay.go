package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"benchd.dev/internal/modelfake"
)

// The command is registered here, after cli.go's init (files initialize
// in name order), so that it stays beside its code.
func init() {
	commands = append(commands, command{"model-replay", "--script FILE [--listen ADDR] [--log FILE]",
		"serve a scripted model session (OpenAI Responses, Chat Completions, Anthropic Messages) to dry-run an agent's set-up", (*CLI).cmdModelReplay})
}

// modelReplayListening is the first line model-replay --json prints.
type modelReplayListening struct {
	Listening string `json:"listening"` // host:port
	URL       string `json:"url"`       // the base URL to give an agent
	Script    string `json:"script"`
	Log       string `json:"log,omitempty"` // the request log's file, if not stdout
}

// cmdModelReplay serves a modelfake script until ctx ends. It prints the
// address it listens on (on stderr, or with --json as a JSON line on
// stdout), then one JSON line per request (to --log FILE instead when
// given).
func (c *CLI) cmdModelReplay(ctx context.Context, args []string) int {
	f := c.newFlags("model-replay")
	script := f.String("script", "", "the session script (JSON; see package modelfake)")
	listen := f.String("listen", "127.0.0.1:0", "address to listen on")
	logFile := f.String("log", "", "write the request log to FILE instead of stdout")
	pos, code, ok := c.parse(f, args)
	if !ok {
		return code
	}
	if code, ok := c.wantArgs(f, pos, 0, 0, ""); !ok {
		return code
	}
	if *script == "" {
		return c.usageError("model-replay", "missing --script FILE")
	}
	sc, err := modelfake.LoadScript(*script)
	if err != nil {
		return c.fail("model-replay", exitError, err)
	}
	log := c.Stdout
	if *logFile != "" {
		lf, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return c.fail("model-replay", exitError, err)
		}
		defer lf.Close()
		log = lf
	}
	srv, err := modelfake.New(modelfake.Config{Script: sc, Log: log})
	if err != nil {
		return c.fail("model-replay", exitError, err)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return c.fail("model-replay", exitError, err)
	}
	if f.json {
		b, err := json.Marshal(modelReplayListening{Listening: ln.Addr().String(), URL: "http://" + ln.Addr().String(), Script: *script, Log: *logFile})
		if err != nil {
			ln.Close()
			return c.fail("model-replay", exitError, err)
		}
		fmt.Fprintf(c.Stdout, "%s\n", b)
	} else {
		fmt.Fprintf(c.Stderr, "benchctl model-replay: listening on http://%s\n", ln.Addr())
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return c.fail("model-replay", exitError, err)
	}
	srv.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return c.fail("model-replay", exitError, err)
	}
	return exitOK
}
