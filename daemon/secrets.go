package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	"benchd.dev/client/apitype"
	"benchd.dev/internal/scrub"
)

// MinSecretBytes is the shortest value of an --env variable that is
// scrubbed (scrub.MinSecretBytes).
const MinSecretBytes = scrub.MinSecretBytes

// scrubber replaces the values of a set of variables, exact matches, by
// their markers (package scrub). The zero value replaces nothing.
type scrubber struct{ r scrub.Replacer }

// newScrubber returns the scrubber of env (scrub.New).
func newScrubber(env []apitype.EnvVar) scrubber { return scrubber{scrub.New(env)} }

// text returns s scrubbed.
func (sc scrubber) text(s string) string { return sc.r.String(s) }

// attempt scrubs the text of a's record that can carry what the agent
// printed or asked for: the infra error, the reasons' messages and the
// names its DNS queries asked for.
func (sc scrubber) attempt(a *apitype.Attempt) {
	if sc.r.Empty() {
		return
	}
	a.InfraError = sc.text(a.InfraError)
	for i := range a.Reasons {
		a.Reasons[i].Message = sc.text(a.Reasons[i].Message)
	}
	for i := range a.Network.DNS {
		a.Network.DNS[i].Name = sc.text(a.Network.DNS[i].Name)
	}
}

// file scrubs the capture file at path in place (the sandbox caps it at
// a few MiB). A missing file or path "" is nothing to scrub.
func (sc scrubber) file(path string) error {
	if sc.r.Empty() || path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("unable to scrub %s: %w", path, err)
	}
	out := sc.text(string(b))
	if out == string(b) {
		return nil
	}
	if err := os.WriteFile(path, []byte(out), 0o640); err != nil {
		return fmt.Errorf("unable to scrub %s: %w", path, err)
	}
	return nil
}

// secretSet holds the --env values of the attempts queued or running in
// this process, for the log: every record benchd writes while they live
// is scrubbed with all of them (secretSet.handler).
type secretSet struct {
	mu sync.Mutex
	// byAttempt is each live attempt's variables.
	byAttempt map[string][]apitype.EnvVar

	// cur is the scrubber of every value in byAttempt, replaced whole on
	// each change, so that logging takes no lock.
	cur atomic.Pointer[scrubber]
}

// add registers the values of attempt id's variables.
func (s *secretSet) add(id string, env []apitype.EnvVar) {
	if len(env) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byAttempt == nil {
		s.byAttempt = map[string][]apitype.EnvVar{}
	}
	s.byAttempt[id] = env
	s.rebuild()
}

// remove forgets attempt id's values, once it has ended.
func (s *secretSet) remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byAttempt[id]; !ok {
		return
	}
	delete(s.byAttempt, id)
	s.rebuild()
}

func (s *secretSet) rebuild() {
	var all []apitype.EnvVar
	for _, env := range s.byAttempt {
		all = append(all, env...)
	}
	sc := newScrubber(all)
	s.cur.Store(&sc)
}

func (s *secretSet) current() scrubber {
	if sc := s.cur.Load(); sc != nil {
		return *sc
	}
	return scrubber{}
}

// handler wraps h so that every record's message and attribute values
// are scrubbed with the values live when it is written. Attributes given
// to WithAttrs are scrubbed then (benchd gives it names and ids).
func (s *secretSet) handler(h slog.Handler) slog.Handler {
	return &scrubHandler{inner: h, set: s}
}

type scrubHandler struct {
	inner slog.Handler
	set   *secretSet
}

func (h *scrubHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *scrubHandler) Handle(ctx context.Context, r slog.Record) error {
	sc := h.set.current()
	if sc.r.Empty() {
		return h.inner.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, sc.text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(scrubAttr(sc, a))
		return true
	})
	return h.inner.Handle(ctx, out)
}

func (h *scrubHandler) WithAttrs(as []slog.Attr) slog.Handler {
	sc := h.set.current()
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i] = scrubAttr(sc, a)
	}
	return &scrubHandler{inner: h.inner.WithAttrs(out), set: h.set}
}

func (h *scrubHandler) WithGroup(name string) slog.Handler {
	return &scrubHandler{inner: h.inner.WithGroup(name), set: h.set}
}

// scrubAttr scrubs a's value: a string, a group's members, and anything
// else as the text it prints as (an error, a Stringer, a struct).
func scrubAttr(sc scrubber, a slog.Attr) slog.Attr {
	if sc.r.Empty() {
		return a
	}
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, sc.text(v.String()))
	case slog.KindGroup:
		g := v.Group()
		out := make([]slog.Attr, len(g))
		for i, m := range g {
			out[i] = scrubAttr(sc, m)
		}
		return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}
	case slog.KindAny:
		s := fmt.Sprint(v.Any())
		if t := sc.text(s); t != s {
			return slog.String(a.Key, t)
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
