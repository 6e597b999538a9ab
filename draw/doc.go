// Package draw chooses a batch of tasks from a task library by a rule
// fixed in advance (seed 000), and reports results without claiming more
// than they support. The rule reads no product's result: only the
// library, a seed and a cap. Anyone with the library can draw again and
// get the same list byte for byte; docs/draw.md writes the algorithm out
// for a re-implementation.
//
// # Library
//
// A Library is the built-in task bundles (package tasks: their [bench]
// world and difficulty tags) plus manifests of other tasks. A manifest is
// TOML, an array of [[task]] tables, or JSON lines, one object a line;
// both have the keys of Task: id, world, difficulty (tasks.DifficultyTags),
// needs_accounts, needs_internet, robot_check, changeset, and for
// reply-only tasks needs and faults. Unknown keys are an error. Load
// reads files and directories of them (*.toml, *.jsonl, *.json).
//
// A task's changeset is the set of changes its reference solution makes,
// each "KIND PATH" (added, modified, deleted) or "renamed FROM -> PATH",
// as fsmon/journal's changeset prints them. Reads never count: a
// changeset holds only what differs between the initial and the final
// tree. For a bundle, benchctl library index records it by running
// builtin:reference through the daemon and writes a manifest entry; any
// manifest may give it directly. A task makes no changes exactly when it
// is tagged reply-only; the library refuses a task where the two
// disagree, so a task whose changeset was never recorded cannot pass as
// reply-only.
//
// The library's hash is the SHA-256 of Library.Canonical, a line
// encoding of every task in bytewise order of id. A list names the hash
// of the library it was drawn from.
//
// # Grouping
//
// Two tasks are in one group when they run in the same world and their
// reference solutions make the same set of changes. A change is the pair
// (kind, path): the kind counts, so adding a file and editing it are
// different work, and a rename is one change from one path to another.
// Tasks that make no changes are grouped by world, then split by what
// they need from the agent (Task.Needs, such as memory across sessions)
// and by the faults they inject (Task.Faults). GroupKey gives the key.
//
// # Exclusions
//
// Before the draw, tasks that need real accounts on real services and the
// public internet (both) are left out: they cannot start from the same
// state for every product (ExcludedBefore). After the draw, drawn tasks
// that turn out unrunnable for every product, a page that checks for
// automated browsers, are taken out and not replaced (RemovedAfter).
// Both are listed with their reasons.
//
// # The draw
//
// The eligible task ids, sorted bytewise, are shuffled: SplitMix64 seeded
// with the seed (the draw's date as a number, 20261004 for 4 October
// 2026), and Fisher–Yates in Durstenfeld's form from the last index down,
// each index drawn uniformly by rejection (Shuffle, SplitMix64.Below).
// From each group, in shuffle order, the first task is picked; then, up to
// the cap (2), the first later task that carries a difficulty tag no
// earlier pick of the group carries, else the next in the shuffle. The
// picks in shuffle order are the draw (Draw).
//
// # The list
//
// Result.Render writes the list: the rule (seed, cap, shuffle, grouping,
// gap filling, exclusions, the library's hash), the tasks in draw order
// with their world, group and why each was picked, and the counts
// (library size, excluded with reasons, eligible, groups, drawn, removed
// after with reasons, listed, worlds and each world's count and share).
// Verify reads the seed and cap from a list, draws again and names the
// first line that differs (Difference), classing a task line as changed,
// added, removed or reordered.
//
// # Scorecards
//
// A scorecard reports, for each series of attempts, each agent's
// completion rate (the mean of its per-task rates) with a 95% interval,
// each task's rate and what happened on it, and which agents can be told
// apart. It claims no more than the data supports: it never ranks agents
// whose intervals overlap, never compares agents measured on different
// task sets, and never joins two series.
//
// # Series
//
// A series is identified by its task list, its grading rules' version and
// its draw rule (Series.ID hashes the three):
//
//   - The task list: SuiteTasks for the built-in suite, or the tasks of a
//     draw LIST (benchctl draw -o LIST).
//   - The grading rules: RulesVersion (the verdict composition of package
//     graders) and, for each task, the hash of the bundle that grades it
//     (its hidden tests and grader parameters). A series takes each
//     task's bundle as the daemon has it now, or, for a task the daemon no
//     longer has, the bundle of its newest attempt. Attempts graded by
//     another bundle belong to another series: they are left out and
//     counted as such, never mixed in.
//   - The draw rule: the LIST's rule header, or "built-in suite".
//
// An attempt belongs to a series when its task is in the list and its
// bundle is the series'. One attempt may so belong to two series (a task
// in both the suite and a drawn list); each series still stands alone.
// Series are shown side by side with their dates (first and last attempt)
// and never joined into one line or one figure.
//
// # Agents and attempts
//
// An agent is what a user means by one (AgentGroupOf): a preset's or
// command's executable hash, version, model and arguments, the arguments
// with their endpoints masked (a gateway URL, a HOST:PORT, a temporary
// path: where the model traffic goes, not what the agent does), or a
// built-in's spec and model. One agent run through a dry-run server and
// through the real API is one row; its label is short (the spec and
// model), and benchctl show has each attempt's whole command line. An
// agent whose attempts are all infra errors never ran: it is no row, its
// attempts are counted (InfraOnly). A scored attempt is
// one with a decided verdict (state done, pass or fail): its pass counts
// as a completion, its fail as a non-completion. Infra errors are never
// scored (the harness failed, not the agent); canceled and unfinished
// attempts have no verdict and are not scored either. An unresolved
// attempt (a verdict the grader left to review, not yet reviewed) is
// neither a pass nor a fail: it is not scored until benchctl review
// decides it, and then counts as decided. Each is counted and shown.
//
// # Rates and intervals
//
// An agent's rate is the mean over tasks of its per-task rates (a task's
// passes over its scored attempts): each task weighs the same, whatever
// its number of attempts (TaskMean). Attempts are not weighed: two
// attempts of one task share the task, an agent that solves a task tends
// to solve it again, and a task run ten times would speak for the others.
//
// Bootstrap is a two-stage cluster bootstrap of that mean: the tasks with
// a scored attempt, sorted by id, are drawn with replacement as many
// times as there are tasks, then within each drawn task its attempts are
// drawn with replacement; a resample's rate is the mean of the drawn
// tasks' rates. BootstrapResamples (2,000) resamples give the percentile
// interval: sorted, the rates at indexes floor(0.025*B) and
// ceil(0.975*B)-1. Indexes come from the draw's generator (SplitMix64 and
// its Below) seeded with BootstrapSeed, so a scorecard is reproducible.
// With fewer than two tasks there is no bootstrap interval.
//
// TaskWilson is the Wilson score interval (z = 1.959963984540054) of the
// mean rate as if each task were one trial: it counts tasks, not
// attempts, and always contains the rate. The reported interval
// (AgentScore.Interval) is the bootstrap widened to contain it: the
// percentile bootstrap is too narrow with few tasks and collapses to a
// point when every task is all passes (or all fails), where TaskWilson
// still says how little the number of tasks shows. docs/scorecard.md
// gives the coverage measured.
//
// # Separation
//
// Agents are compared only with agents of the same task set (the tasks
// they have a scored attempt of, AgentScore.TaskSet); NotCompared says,
// in one line per task set, which were not. Within a task set, two agents
// are separated only when their intervals do not overlap; otherwise the
// scorecard says they cannot be separated and lists them by name, not by
// rate. An agent with fewer than two tasks has no bootstrap interval and
// is separated from no one. SeparationLines writes the pairs in at most
// one line per agent.
//
// # Plots
//
// WriteHTML and WriteTextPlot draw agents of one task set together, by
// name (PlotOrder), on an axis from 0 to 100%: the rate, the interval
// and the bootstrap; a bootstrap interval that is a point is drawn as a
// tick (HTML) or a distinct mark (text), never as nothing. WritePlotSVG
// writes the HTML page's plot of one series alone, as an SVG document
// (benchctl view shows it as an image).
package draw
