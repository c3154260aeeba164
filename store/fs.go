package store

import (
	"os"

	"github.com/ringmq/ringmq/store/vfs"
)

var pageSize = os.Getpagesize()

// The file-system seam (package vfs, which documents it): every file the store touches goes through an
// FS, given in Deps.FS; nil = NewOSFS. Tests pass a faultfs.FS to inject ENOSPC and EIO or to drop what
// was never synced.
type (
	// FS is vfs.FS.
	FS = vfs.FS
	// File is vfs.File, an open file of an FS.
	File = vfs.File
	// DiskUsage is vfs.DiskUsage, the space of one file system.
	DiskUsage = vfs.DiskUsage
)
