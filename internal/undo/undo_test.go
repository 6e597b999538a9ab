package undo

import (
	"errors"
	"strings"
	"testing"
)

func TestRunReverseOnceJoined(t *testing.T) {
	var s Stack
	var order []string
	s.Push("first", func() error { order = append(order, "first"); return nil })
	s.Push("second", func() error { order = append(order, "second"); return errors.New("boom") })
	s.Push("third", func() error { order = append(order, "third"); return nil })
	err := s.Run()
	if got, want := strings.Join(order, ","), "third,second,first"; got != want {
		t.Fatalf("order: got %s, want %s", got, want)
	}
	if err == nil || !strings.Contains(err.Error(), "second: boom") {
		t.Fatalf("error: got %v, want one naming the failed step", err)
	}
	order = nil
	if err := s.Run(); err != nil || len(order) != 0 {
		t.Fatalf("second Run: got %v and %v, want nothing run", err, order)
	}
}
