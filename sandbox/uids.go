package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// DefaultUIDRange is the block of uids benchd runs agents and graders as
// when not told otherwise: 65536 uids from 0x70000000, above systemd's
// range for nspawn containers (524288-1879048191) and below its range for
// foreign images (from 2147352576), clear of /etc/subuid's usual blocks
// (from 100000, 65536 per user) and of every account of a normal
// /etc/passwd. See "Uids" in docs/security.md.
const DefaultUIDRange = "1879048192-1879113727"

// ErrNoUID is returned by UIDPool.Acquire when every uid of the range
// belongs to a live attempt or grading.
var ErrNoUID = errors.New("no free uid in benchd's range")

// UIDRange is a block of uids, First to Last inclusive.
type UIDRange struct {
	First, Last int
}

// ParseUIDRange reads "FIRST-LAST". Both must be above 65535 (the
// system's and regular users' accounts, nobody), below 2^31 - 1 (uids
// past it are handled as negative by some tools), and in order.
func ParseUIDRange(s string) (UIDRange, error) {
	a, b, ok := strings.Cut(s, "-")
	first, err1 := strconv.Atoi(a)
	last, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return UIDRange{}, fmt.Errorf("%w: uid range %q: want FIRST-LAST", ErrInvalid, s)
	}
	r := UIDRange{First: first, Last: last}
	if first <= 65535 || last >= 1<<31-1 || last < first {
		return UIDRange{}, fmt.Errorf("%w: uid range %s: want 65536 <= FIRST <= LAST < 2147483647", ErrInvalid, r)
	}
	return r, nil
}

func (r UIDRange) String() string { return fmt.Sprintf("%d-%d", r.First, r.Last) }

// Size is the number of uids in r.
func (r UIDRange) Size() int { return r.Last - r.First + 1 }

// Accounts lists the entries of a passwd file (or a group file: the
// third field is the id in both) whose id lies in r, as "name:id". benchd
// refuses a range an account uses: that account would share its files
// and kernel allowances with an agent.
func (r UIDRange) Accounts(passwd io.Reader) ([]string, error) {
	var used []string
	sc := bufio.NewScanner(passwd)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) < 3 {
			continue
		}
		id, err := strconv.Atoi(f[2])
		if err == nil && id >= r.First && id <= r.Last {
			used = append(used, f[0]+":"+f[2])
		}
	}
	return used, sc.Err()
}

// UIDPool hands out the uids of a range, one to each running attempt
// and one to each grading, so that the kernel's per-user allowances
// (pipe buffer pages, inotify instances and watches, POSIX message
// queue bytes, processes) are counted per attempt: a hog exhausts its own
// uid's and no one else's. A uid is never held twice at once, and a
// released one is handed out again only after every other free uid (the
// pool goes round the range), so a uid just left by an attempt is the
// last to serve another. Safe for concurrent use.
type UIDPool struct {
	r UIDRange

	mu   sync.Mutex
	next int          // where the next search starts
	held map[int]bool // uids of live attempts and gradings
}

// NewUIDPool returns a pool over r.
func NewUIDPool(r UIDRange) *UIDPool {
	return &UIDPool{r: r, next: r.First, held: map[int]bool{}}
}

// Range is the pool's range.
func (p *UIDPool) Range() UIDRange { return p.r }

// Acquire takes a free uid; release gives it back (a second call does
// nothing). The caller must release it only once no process runs as the
// uid any more.
func (p *UIDPool) Acquire() (uid int, release func(), err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.held) >= p.r.Size() {
		return 0, nil, fmt.Errorf("%w %s: all %d in use", ErrNoUID, p.r, len(p.held))
	}
	uid = p.next
	for p.held[uid] {
		uid = p.after(uid)
	}
	p.held[uid] = true
	p.next = p.after(uid)
	var once sync.Once
	return uid, func() {
		once.Do(func() {
			p.mu.Lock()
			delete(p.held, uid)
			p.mu.Unlock()
		})
	}, nil
}

// after is the uid after u, round the range.
func (p *UIDPool) after(u int) int {
	if u >= p.r.Last {
		return p.r.First
	}
	return u + 1
}

// InUse is the number of uids held.
func (p *UIDPool) InUse() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.held)
}
