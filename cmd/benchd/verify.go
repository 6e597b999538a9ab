package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"benchd.dev/fsmon/journal"
)

type verifyResult struct {
	OK      bool   `json:"ok"`
	Records int    `json:"records"`
	Error   string `json:"error,omitempty"`
	BadSeq  uint64 `json:"bad_seq,omitempty"`
}

// runVerify checks a journal: the hash chain, every blob, and that
// replaying it rebuilds the final tree. Exit 1 names the first bad record.
func runVerify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("journal verify", flag.ContinueOnError)
	fl.SetOutput(io.Discard)
	asJSON := fl.Bool("json", false, "print the result as JSON")
	if code, ok := parseFlags(fl, args, stdout, stderr, "FILE", []string{"benchd journal verify /tmp/j/journal.jsonl"}); !ok {
		return code
	}
	if fl.NArg() != 1 {
		return fail(stderr, 2, "journal verify: want exactly one journal FILE")
	}
	path := fl.Arg(0)
	res := verifyResult{}
	recs, err := journal.Read(path)
	if err == nil {
		res.Records = len(recs)
		blobs := &journal.Blobs{Dir: journal.BlobsDir(path)}
		err = journal.Verify(recs, blobs)
		if err == nil {
			err = journal.VerifyReplay(recs, blobs)
		}
	}
	if err != nil {
		res.Error = err.Error()
		var ve *journal.VerifyError
		if errors.As(err, &ve) {
			res.BadSeq = ve.Seq
		}
	}
	res.OK = err == nil
	if *asJSON {
		json.NewEncoder(stdout).Encode(res)
	} else if res.OK {
		fmt.Fprintf(stdout, "ok: %s: %d records, chain intact, every blob matches, replay rebuilds the final tree\n", path, res.Records)
	}
	if !res.OK {
		if !*asJSON {
			fmt.Fprintf(stderr, "benchd: journal verify: %s: %v\n", path, err)
		}
		return 1
	}
	return 0
}
