package forensics

import "strconv"

// The entries of an export archive (apitype.ExportLayout describes them
// on the wire). Writer writes them, Verify reads them: nothing else
// spells them.
const (
	AttemptFile  = "attempt.json"         // the attempt as stored (apitype.Attempt)
	TaskFile     = "task.json"            // the task and the policy that graded it (apitype.TaskInfo)
	JournalFile  = "journal.jsonl"        // the journal's raw lines
	StdoutFile   = "transcript/stdout"    // the agent's output, capped
	StderrFile   = "transcript/stderr"    //
	SignedFile   = "attempt.dsse.json"    // the signed statement (a DSSE envelope)
	ReviewFile   = "review.json"          // a reviewed attempt's review (apitype.Review)
	ModelFile    = "model.jsonl"          // the model calls (apitype.ModelCallsJSONL)
	ModelDir     = "model/"               // each call's stored messages (ModelMessageFile)
	BlobsDirName = JournalFile + ".blobs" // the blobs the journal names (BlobFile)
)

// Required are the entries every archive has.
var Required = []string{JournalFile, AttemptFile, TaskFile, StdoutFile, StderrFile}

// BlobFile is the entry of the blob of hash sha.
func BlobFile(sha string) string { return BlobsDirName + "/" + sha[:2] + "/" + sha }

// ModelMessageFile is the entry of call seq's stored request, or its
// response; the name below ModelDir is modelgw.MessageName's, the work
// directory's.
func ModelMessageFile(seq int, response bool) string {
	kind := ".request"
	if response {
		kind = ".response"
	}
	return ModelDir + strconv.Itoa(seq) + kind
}
