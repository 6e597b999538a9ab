//go:build !linux

package store

import "os"

// syncFS syncs dir. Without syncfs(2) it cannot reach the blobs' content,
// which is written by other code; benchd runs on Linux.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Sync()
}
