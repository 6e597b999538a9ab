package tasks

import "errors"

// Sentinel error classes. Every error of this package that is about the
// caller's input wraps one of them, so the daemon can translate it at its
// API boundary (not found, invalid).
var (
	// ErrNotFound: no bundle has the requested id.
	ErrNotFound = errors.New("task not found")
	// ErrInvalid: a bundle, a task id or a path is malformed.
	ErrInvalid = errors.New("invalid task")
)
