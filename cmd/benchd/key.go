package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"benchd.dev/daemon"
)

// runKey prints the public half of benchd's host key, making the key
// first when the state directory has none (as benchd does at start).
func runKey(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("key", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	asJSON := fl.Bool("json", false, "print the key as JSON")
	state := fl.String("state", daemon.DefaultStateDir, "benchd's state directory")
	if code, ok := parseFlags(fl, args, stdout, stderr, "", []string{"benchd key", "benchd key --state /tmp/b/state --json"}); !ok {
		return code
	}
	if fl.NArg() > 0 {
		return fail(stderr, 2, "key: unexpected argument %q", fl.Arg(0))
	}
	key, err := daemon.HostKey(*state)
	if err != nil {
		return fail(stderr, 1, "key: %v", err)
	}
	pub := daemon.PublicHostKey(key)
	if *asJSON {
		json.NewEncoder(stdout).Encode(pub)
		return 0
	}
	fmt.Fprintln(stdout, pub.PublicKey)
	return 0
}
