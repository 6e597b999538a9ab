package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// syncFS flushes the file system that holds dir (syncfs(2)): one call
// makes every blob placed before it durable, links and copies alike.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
