package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// hostRoot are the entries of the host's / that the sandbox shows, each
// as the host has it: a symbolic link as the same link, a directory as a
// read-only bind. Nothing else of the host's / is there.
var hostRoot = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"}

// etcHost are the entries of the host's /etc that the sandbox shows (the
// same way), when the host has them: what the dynamic loader, name
// lookups, TLS, time zones, Debian's alternatives and the interpreters
// (python3, node, git, the agent CLIs) read. Measured with strace on
// python3, node and git, and with the agents' end-to-end tests.
var etcHost = []string{
	"ld.so.cache", "ld.so.conf", "ld.so.conf.d",
	"host.conf", "gai.conf", "protocols", "services", "networks", "mime.types",
	"ssl/certs", "ssl/openssl.cnf",
	"localtime", "timezone",
	"alternatives",
	"os-release", "debian_version", "mtab",
}

// etcPatterns are globs of /etc entries shown the same way: Debian's
// python3 reads its sitecustomize.py from /etc/python3.N.
var etcPatterns = []string{"python3", "python3.*"}

// hostEntry is one host path shown in the sandbox.
type hostEntry struct {
	path string // where, inside the sandbox (the host's path too)
	tree int    // a detached copy of the mount tree, or -1 for a link
	link string // the link's target
	dir  bool
}

// hostItem prepares the host path p for the same path in the sandbox: a
// link is read, a directory or a regular file cloned with attrs. ok is
// false when the host has nothing (or something else: a socket, a
// device) at p.
func hostItem(p string, attrs uint64) (hostEntry, bool, error) {
	fi, err := os.Lstat(p)
	if err != nil {
		if os.IsNotExist(err) {
			return hostEntry{}, false, nil
		}
		return hostEntry{}, false, fmt.Errorf("look at host %s: %w", p, err)
	}
	switch t := fi.Mode(); {
	case t&os.ModeSymlink != 0:
		l, err := os.Readlink(p)
		if err != nil {
			return hostEntry{}, false, fmt.Errorf("read host link %s: %w", p, err)
		}
		return hostEntry{path: p, tree: -1, link: l}, true, nil
	case t.IsDir() || t.IsRegular():
		tree, err := cloneTree(p, t.IsDir(), attrs)
		if err != nil {
			return hostEntry{}, false, err
		}
		return hostEntry{path: p, tree: tree, dir: t.IsDir()}, true, nil
	}
	return hostEntry{}, false, nil
}

// keepEntry registers the entry's tree with keep (closed after set-up).
func keepEntry(e hostEntry, keep func(int) int) hostEntry {
	if e.tree >= 0 {
		keep(e.tree)
	}
	return e
}

// etcEntries lists the /etc entries to show: etcHost, then the matches
// of etcPatterns.
func etcEntries() ([]string, error) {
	names := slices.Clone(etcHost)
	for _, pat := range etcPatterns {
		ms, err := filepath.Glob("/etc/" + pat)
		if err != nil {
			return nil, fmt.Errorf("list host /etc/%s: %w", pat, err)
		}
		for _, m := range ms {
			names = append(names, strings.TrimPrefix(m, "/etc/"))
		}
	}
	return names, nil
}

// writeEtc writes the generated files of /etc into the new root's /etc
// (a directory of the root tmpfs, read-only with it).
func writeEtc(root int, wc *wireConfig) error {
	etc, err := mountPoint(root, "/etc", true)
	if err != nil {
		return fmt.Errorf("make /etc: %w", err)
	}
	defer unix.Close(etc)
	given := map[string]bool{}
	for _, f := range wc.Files {
		given[f.Path] = true
	}
	for name, data := range etcFiles(wc) {
		if given["/etc/"+name] {
			continue // bound over it later: not made twice
		}
		if err := writeAt(etc, name, data, 0o444); err != nil {
			return fmt.Errorf("write /etc/%s: %w", name, err)
		}
	}
	return nil
}

// etcFiles is the content of the generated files of /etc: an account
// named agent for the agent's uid and gid (home $HOME), root and nobody,
// the host name, name lookups from files (and DNS, which answers only
// what the network namespace serves).
func etcFiles(wc *wireConfig) map[string][]byte {
	uid, gid := strconv.Itoa(wc.UID), strconv.Itoa(wc.GID)
	passwd := "root:x:0:0:root:/root:/usr/sbin/nologin\n" +
		"agent:x:" + uid + ":" + gid + ":agent:" + wc.Home + ":/bin/sh\n"
	if wc.UID != 65534 {
		passwd += "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	}
	group := "root:x:0:\nagent:x:" + gid + ":\n"
	if wc.GID != 65534 {
		group += "nogroup:x:65534:\n"
	}
	return map[string][]byte{
		"passwd":   []byte(passwd),
		"group":    []byte(group),
		"hostname": []byte(wc.Hostname + "\n"),
		"hosts": []byte("127.0.0.1\tlocalhost\n127.0.1.1\t" + wc.Hostname + "\n" +
			"::1\tlocalhost ip6-localhost ip6-loopback\n"),
		"resolv.conf": nil,
		"nsswitch.conf": []byte("passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n" +
			"networks: files\nprotocols: files\nservices: files\nethers: files\nrpc: files\nnetgroup: files\n"),
	}
}

// Shows reports whether the sandbox shows the host's path p (absolute
// and clean) at the same path: under one of hostRoot's entries, except
// /usr/local (an empty tmpfs in the sandbox), or under one of binds
// (host paths bound at the same path). It does not follow links: when p
// is a link, its target must be shown too for it to work inside.
func Shows(p string, binds []string) bool {
	for _, b := range binds {
		if within(p, filepath.Clean(b)) {
			return true
		}
	}
	if within(p, "/usr/local") {
		return false
	}
	for _, name := range hostRoot {
		if within(p, "/"+name) {
			return true
		}
	}
	return false
}

// ShownTrees names what Shows accepts without binds, for messages.
func ShownTrees() string {
	var b strings.Builder
	for i, name := range hostRoot {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("/" + name)
	}
	b.WriteString(" (but not /usr/local, which the sandbox hides)")
	return b.String()
}
