// Package undo is a stack of undo steps for a set-up made of several
// steps (a cgroup, then a namespace, then a mount...): each step pushes
// what undoes it, and Run undoes them in reverse order, once each. It is
// the one undo stack of benchd: an attempt's steps (daemon/runs), a
// confined job (confine), and the set-ups inside each kernel facility
// (limits' groups, netns' namespaces, sandbox's start) unwind on it.
package undo

import (
	"errors"
	"fmt"
	"sync"
)

// Stack holds undo steps. The zero value is ready; it is safe for
// concurrent use.
type Stack struct {
	mu    sync.Mutex
	steps []step
}

type step struct {
	what string
	fn   func() error
}

// Push adds a step; what names it in Run's errors.
func (s *Stack) Push(what string, fn func() error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.steps = append(s.steps, step{what, fn})
}

// Run undoes every step pushed so far, last first, and joins their
// errors. Every step runs even when an earlier one fails; a step runs at
// most once.
func (s *Stack) Run() error {
	s.mu.Lock()
	steps := s.steps
	s.steps = nil
	s.mu.Unlock()
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		if err := steps[i].fn(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", steps[i].what, err))
		}
	}
	return errors.Join(errs...)
}
