// Package journal is the forensic record of an fsmon workspace: the record
// format, the hash chain that makes any later edit detectable, verification,
// replay of the tree at any record, and the changeset between two trees.
//
// It is pure Go with no FUSE dependency, so that a client can check an
// exported journal on any machine.
package journal
