//go:build !unix

package store

import (
	"errors"
	"io"
	"os"

	"github.com/ringmq/ringmq/flush"
)

var errUnsupportedOS = errors.New("store: the OS file system needs a unix platform (mmap)")

// NewOSFS returns an FS whose every call fails: the store maps files and runs on unix systems only.
// The package still builds here so that tools depending on it do.
func NewOSFS(flush.Backend) FS { return unsupportedFS{} }

type unsupportedFS struct{}

func (unsupportedFS) OpenFile(string, int, os.FileMode) (File, error) { return nil, errUnsupportedOS }
func (unsupportedFS) Remove(string) error                             { return errUnsupportedOS }
func (unsupportedFS) RemoveAll(string) error                          { return errUnsupportedOS }
func (unsupportedFS) Rename(string, string) error                     { return errUnsupportedOS }
func (unsupportedFS) MkdirAll(string, os.FileMode) error              { return errUnsupportedOS }
func (unsupportedFS) ReadDir(string) ([]os.DirEntry, error)           { return nil, errUnsupportedOS }
func (unsupportedFS) Stat(string) (os.FileInfo, error)                { return nil, errUnsupportedOS }
func (unsupportedFS) SyncDir(string) error                            { return errUnsupportedOS }
func (unsupportedFS) DiskUsage(string) (DiskUsage, error)             { return DiskUsage{}, errUnsupportedOS }
func (unsupportedFS) Lock(string) (io.Closer, error)                  { return nil, errUnsupportedOS }

func isNoSpace(err error) bool { return errors.Is(err, flush.ErrNoSpace) }
