// Package forensics is the export archive of an attempt: its layout (the
// entry names, layout.go, spelled nowhere else), its writing (Writer,
// which benchd's export uses), and its verification (Verify, which
// benchctl verify calls): the signature and every signed field, the
// review, the policy, the model calls, the blobs, the journal's chain and
// head, the replay of the final tree, the changeset, and what the verdict
// claims of the journal, re-derived with the journal's own rules
// (journal.CountsOf, Policy.Violations: the ones the grader applies).
// docs/forensics.md says what an archive proves and what it does not.
//
// # Trusted inputs
//
// Nothing in an archive is trusted: Verify reads it as a stranger's file
// (an entry leading outside, a link or a name given twice is refused)
// and trusts only the public key it is given. Without a key it checks
// that the archive is consistent, not who made it.
//
// It is pure Go with no cgo, so that anyone can check an archive on any
// machine; it never runs the grader (Options.Regrade is the caller's).
package forensics
