package daemon

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// peer is who is at the other end of a connection.
type peer struct {
	PID, UID, GID int
	Err           error // why the credentials could not be read
}

type peerKey struct{}

// connContext puts the connection's peer credentials in its context
// (http.Server.ConnContext).
func connContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, peerOf(c))
}

// peerOf reads SO_PEERCRED of a unix connection.
func peerOf(c net.Conn) peer {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return peer{Err: fmt.Errorf("not a unix connection: %T", c)}
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return peer{Err: fmt.Errorf("unable to get the socket: %w", err)}
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return peer{Err: fmt.Errorf("unable to read peer credentials: %w", err)}
	}
	if credErr != nil {
		return peer{Err: fmt.Errorf("unable to read peer credentials: %w", credErr)}
	}
	return peer{PID: int(cred.Pid), UID: int(cred.Uid), GID: int(cred.Gid)}
}

func peerFrom(ctx context.Context) peer {
	p, ok := ctx.Value(peerKey{}).(peer)
	if !ok {
		return peer{Err: fmt.Errorf("no peer credentials")}
	}
	return p
}

// authorizer decides who may use the API: root, and members of Group.
type authorizer struct {
	Group   string // group name; members may use the API
	ProcDir string // "/proc"; a fake tree in tests
	// LookupGID resolves Group; nil means os/user.
	LookupGID func(name string) (int, error)
}

func lookupGID(name string) (int, error) {
	g, err := user.LookupGroup(name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(g.Gid)
}

// allow returns nil when p may use the API, and an error wrapping
// errForbidden that says why not.
func (a authorizer) allow(p peer) error {
	if p.Err != nil {
		return fmt.Errorf("caller unknown: %v: %w", p.Err, errForbidden)
	}
	if p.UID == 0 {
		return nil
	}
	lookup := a.LookupGID
	if lookup == nil {
		lookup = lookupGID
	}
	gid, err := lookup(a.Group)
	if err != nil {
		return fmt.Errorf("uid %d is not root and group %q does not exist: %w", p.UID, a.Group, errForbidden)
	}
	if p.GID == gid {
		return nil
	}
	uid, groups, err := procCreds(filepath.Join(a.ProcDir, strconv.Itoa(p.PID), "status"))
	if err == nil && uid == p.UID {
		for _, g := range groups {
			if g == gid {
				return nil
			}
		}
	}
	return fmt.Errorf("uid %d is not root and not in group %q: %w", p.UID, a.Group, errForbidden)
}

// procCreds reads the real uid and the supplementary groups from a
// /proc/PID/status file.
func procCreds(path string) (uid int, groups []int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	uid = -1
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		switch key {
		case "Uid":
			if len(fields) == 0 {
				return 0, nil, fmt.Errorf("%s: empty Uid line", path)
			}
			if uid, err = strconv.Atoi(fields[0]); err != nil {
				return 0, nil, fmt.Errorf("%s: bad Uid line: %w", path, err)
			}
		case "Groups":
			for _, s := range fields {
				g, err := strconv.Atoi(s)
				if err != nil {
					return 0, nil, fmt.Errorf("%s: bad Groups line: %w", path, err)
				}
				groups = append(groups, g)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, nil, err
	}
	if uid < 0 {
		return 0, nil, fmt.Errorf("%s: no Uid line", path)
	}
	return uid, groups, nil
}
