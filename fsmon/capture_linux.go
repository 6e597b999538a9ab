package fsmon

import (
	"context"
	"slices"
	"sync"
)

// A file's content is captured at the RELEASE of each handle that was
// open for writing: the view reads the file, stores it as a blob and
// appends the release record with its hash. For a small new file that
// is about as much work as the agent's own write of it, and it ran in
// the RELEASE request, on the CPUs the agent's next requests wait for.
//
// The capture of a release now waits in a queue, answered at once, and
// a goroutine of the view (captureLoop) does it. It may wait only while
// nothing can change the file under it unrecorded:
//
//   - no other handle of the file is open for writing (the writes of
//     one, with passthrough, never reach the view): a release of a file
//     that another handle still writes is captured in the request, as
//     before;
//   - the file is small (smallBlob, 1 MiB): a larger file is captured
//     in its request as before, so that whatever finishes a file's
//     captures (below) never waits long, nor do the small files queued
//     behind it;
//   - whatever could change the file or its name first finishes the
//     file's waiting captures, in the request and before it changes
//     anything: an open for writing (with O_TRUNC too), a create of a
//     name that exists, a setattr (truncate, chmod, chown, times), a
//     setxattr or removexattr, an unlink of it, a rename over it;
//   - Unmount finishes them all before its own captures and the final
//     tree, and Stats before it counts.
//
// A rename of the file itself (or of a directory above it) does not
// wait: the capture reads the path from the backing descriptor after
// the content, under View.renameMu, and its record names the file as
// named at the record's place in the journal, as for a release the
// kernel sent late.
//
// So the records are ordered as when each capture ran in its request:
// a file's release record precedes every later record of that file,
// and its content is the file's at the release. A crash loses the
// records of the captures still waiting, as it loses those the kernel
// had not sent yet and those of the last sync interval; the backing
// file still holds what they would have recorded, and journal.Recover
// records a release for a file whose content differs from the records.

// maxPending bounds the captures that wait: past it a release is
// captured in its request.
const maxPending = 512

// writers is a node's handles open for writing and the releases of its
// handles whose capture waits.
type writers struct {
	mu      sync.Mutex
	open    int
	pending []*handle
}

// beginWrite counts an open of the node for writing, after finishing
// the node's waiting captures: an open may truncate the file.
func (n *node) beginWrite() {
	n.writers.mu.Lock()
	n.writers.open++
	n.writers.mu.Unlock()
	// Counted first: deferCapture queues nothing more for the node
	// while this open is counted.
	n.flushCaptures()
}

// endWrite uncounts an open for writing that failed.
func (n *node) endWrite() {
	n.writers.mu.Lock()
	n.writers.open--
	n.writers.mu.Unlock()
}

// flushCaptures finishes the node's waiting captures: whatever changes
// the file or its name calls it first.
func (n *node) flushCaptures() {
	n.writers.mu.Lock()
	p := n.writers.pending
	n.writers.pending = nil
	n.writers.mu.Unlock()
	finishAll(p)
}

// deferCapture uncounts the released handle h, and queues its capture
// when no other handle of the file is open for writing and the queue
// has room. It reports whether it did.
func (v *View) deferCapture(h *handle) bool {
	w := &h.n.writers
	w.mu.Lock()
	defer w.mu.Unlock()
	w.open--
	if w.open > 0 {
		return false
	}
	fd, ok := h.LoopbackFile.PassthroughFd()
	if !ok {
		return false
	}
	size, ok := sizeOfFd(fd)()
	if !ok || size > smallBlob {
		return false
	}
	// Counted as waiting before it is queued: the capture may start
	// at once.
	v.waits(h, size)
	if !v.captures.push(h) {
		return false
	}
	w.pending = append(w.pending, h)
	return true
}

func finishAll(hs []*handle) {
	for _, h := range hs {
		h.finish(context.Background())
	}
}

// finish captures the released handle's content and closes its backing
// file, once; a second caller waits until the first is done.
func (h *handle) finish(ctx context.Context) {
	h.capture(ctx, false)
	h.closeOnce.Do(func() {
		h.v.mu.Lock()
		h.v.closedLocked(h)
		h.v.mu.Unlock()
		h.v.closeFile(h.LoopbackFile)
	})
	w := &h.n.writers
	w.mu.Lock()
	w.pending = slices.DeleteFunc(w.pending, func(p *handle) bool { return p == h })
	w.mu.Unlock()
}

// captureQueue is the releases whose capture waits, in the order the
// view received them, for captureLoop.
type captureQueue struct {
	mu    sync.Mutex
	cond  sync.Cond // on mu: the queue grew, or a capture ended
	queue []*handle
	busy  int // captures taken from the queue and not done
	// stopped is set by stop: releases are captured in their request.
	stopped bool
	// held stops captureLoop from taking captures (tests); flushes
	// still take them.
	held bool
	done chan struct{} // closed when captureLoop has returned
}

// startCaptures starts the goroutine that captures waiting releases.
func (v *View) startCaptures() {
	q := &v.captures
	q.cond.L = &q.mu
	q.done = make(chan struct{})
	go v.captureLoop()
}

// push queues h and reports whether it did.
func (q *captureQueue) push(h *handle) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped || q.done == nil || len(q.queue) >= maxPending {
		return false
	}
	q.queue = append(q.queue, h)
	q.cond.Broadcast()
	return true
}

// take removes the first waiting capture, marks it busy and returns
// it; nil when none waits. Called with q.mu held.
func (q *captureQueue) take() *handle {
	if len(q.queue) == 0 {
		return nil
	}
	h := q.queue[0]
	q.queue[0] = nil
	q.queue = q.queue[1:]
	q.busy++
	return h
}

// run finishes h, which take returned, without q.mu held.
func (q *captureQueue) run(h *handle) {
	q.mu.Unlock()
	h.finish(context.Background())
	q.mu.Lock()
	q.busy--
	q.cond.Broadcast()
}

// captureLoop captures the waiting releases in order until stop.
func (v *View) captureLoop() {
	q := &v.captures
	defer close(q.done)
	q.mu.Lock()
	defer q.mu.Unlock()
	q.drain(func() bool { return !q.held || q.stopped }, func() bool { return q.stopped })
}

// flushAll finishes every waiting capture, and waits for those under
// way.
func (v *View) flushAll() {
	q := &v.captures
	if q.done == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.drain(func() bool { return true }, func() bool { return q.busy == 0 })
}

// drain finishes waiting captures while it may take them, until none
// waits and done reports true, and waits for more in between. Called
// with q.mu held.
func (q *captureQueue) drain(mayTake, done func() bool) {
	for {
		if mayTake() {
			if h := q.take(); h != nil {
				q.run(h)
				continue
			}
		}
		if done() {
			return
		}
		q.cond.Wait()
	}
}

// stopCaptures finishes every waiting capture and ends captureLoop;
// later releases are captured in their request.
func (v *View) stopCaptures() {
	q := &v.captures
	if q.done == nil {
		return
	}
	v.flushAll()
	q.mu.Lock()
	q.stopped = true
	q.cond.Broadcast()
	q.mu.Unlock()
	<-q.done
}
