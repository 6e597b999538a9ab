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
	cs := make(journal.Changeset, 0, len(a.Changeset))
	for _, c := range a.Changeset {
		cs = append(cs, journal.Change{Kind: c.Kind, Path: c.Path, From: c.From, Type: c.Type, SHA256: c.SHA256})
	}
	return graders.Input{
		Changeset:    cs,
		AgentExit:    &exit,
		TimedOut:     a.TimedOut,
		Denied:       a.Denied,
		Network:      networkUse(a.Network, agentHostname),
		FinalMessage: finalMessage(stdoutPath),
		Seed:         a.GradeSeed, // a regrade makes the same checks; 0 draws one
	}
}
