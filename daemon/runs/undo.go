package runs

import (
	"errors"
	"fmt"
	"sync"
)

// undoStack holds the undo steps of an attempt; run undoes them in
// reverse order, once each, and joins their errors.
type undoStack struct {
	mu    sync.Mutex
	steps []undoStep
}

type undoStep struct {
	what string
	fn   func() error
}

func (u *undoStack) push(what string, fn func() error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.steps = append(u.steps, undoStep{what, fn})
}

func (u *undoStack) run() error {
	u.mu.Lock()
	steps := u.steps
	u.steps = nil
	u.mu.Unlock()
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		if err := steps[i].fn(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", steps[i].what, err))
		}
	}
	return errors.Join(errs...)
}
