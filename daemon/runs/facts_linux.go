package runs

import (
	"benchd.dev/client/apitype"
	"benchd.dev/fsmon/journal"
	"benchd.dev/graders"
)

// RecordedFacts are the agent facts of attempt a that a grading uses:
// its exit status, whether it timed out, the edits the view refused, its
// network use, its changeset, the seed of the task's generated checks,
// and its final message (the end of stdoutPath, "" for none). The
// engine's grade step and `benchd grade --attempt` (what `benchctl verify
// --regrade` runs on an export) both take them from here, so a regrade
// judges the facts the attempt recorded, not new ones.
func RecordedFacts(a apitype.Attempt, stdoutPath string) graders.Input {
	exit := a.ExitCode
	return graders.Input{
		Changeset:    append(journal.Changeset{}, a.Changeset...),
		AgentExit:    &exit,
		TimedOut:     a.TimedOut,
		Denied:       a.Denied,
		Network:      networkUse(a.Network, agentHostname),
		FinalMessage: finalMessage(stdoutPath),
		Seed:         a.GradeSeed, // a regrade makes the same checks; 0 draws one
	}
}
