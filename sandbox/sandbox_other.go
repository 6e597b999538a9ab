//go:build !linux

package sandbox

import (
	"context"
	"os"
)

// Init returns at once: there is no sandbox init on this system.
func Init() {}

// Sandbox is a started process tree; it cannot exist on this system.
type Sandbox struct{}

// Start fails with ErrUnsupported.
func Start(ctx context.Context, cfg Config) (*Sandbox, error) { return nil, ErrUnsupported }

// Run fails with ErrUnsupported.
func Run(ctx context.Context, cfg Config) (Result, error) { return Result{}, ErrUnsupported }

// Pid returns 0.
func (s *Sandbox) Pid() int { return 0 }

// Signal fails with ErrUnsupported.
func (s *Sandbox) Signal(sig os.Signal) error { return ErrUnsupported }

// Wait fails with ErrUnsupported.
func (s *Sandbox) Wait(ctx context.Context) (Result, error) { return Result{}, ErrUnsupported }
