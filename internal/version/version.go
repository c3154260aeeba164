// Package version says which build of ringmq is running: the version the Makefile stamps in
// with -ldflags -X (from `git describe --always --dirty`), else the VCS revision the Go
// toolchain records in the binary (a plain `go build` in a checkout), and the Go version.
// Every command prints it the same way for --version:
//
//	mqbroker v0.3.0-12-g1a2b3c4 (commit 1a2b3c4d5e6f, go1.26.0)
//
// Safe for concurrent use (read-only after init).
package version

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// Version is set by the Makefile:
//
//	-X github.com/ringmq/ringmq/internal/version.Version=$(git describe --always --dirty)
//
// Empty in a build that did not go through the Makefile.
var Version string

// Commit is set by the Makefile to `git rev-parse HEAD`. The toolchain's own vcs.revision is
// the fallback, but it is missing where the toolchain does not stamp: -buildvcs=false, and git
// worktrees (whose .git is a file the toolchain does not recognize).
var Commit string

// Info is what a binary knows about its own build.
type Info struct {
	Version   string // the stamped version; else "devel" (with "-dirty" for modified sources)
	Commit    string // VCS revision (full hash), "unknown" when the build recorded none
	Modified  bool   // the build's sources differed from Commit
	GoVersion string // runtime.Version()
}

// Get returns this binary's build information.
func Get() Info {
	bi, _ := debug.ReadBuildInfo()
	info := from(Version, bi, runtime.Version())
	if Commit != "" {
		info.Commit = Commit
	}
	return info
}

// from builds the Info from the stamped version and the build information (nil when the binary
// has none); split from Get so the fallbacks can be tested.
func from(stamped string, bi *debug.BuildInfo, goVersion string) Info {
	info := Info{Version: stamped, Commit: "unknown", GoVersion: goVersion}
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				info.Commit = s.Value
			case "vcs.modified":
				info.Modified = s.Value == "true"
			}
		}
	}
	if info.Version == "" {
		info.Version = "devel"
		if info.Modified {
			info.Version += "-dirty"
		}
	} else if strings.HasSuffix(info.Version, "-dirty") {
		// git describe saw the modification even when the toolchain recorded no VCS state
		// (builds with -buildvcs=false, or from a source tree copied without .git).
		info.Modified = true
	}
	return info
}

// String is the --version line without the command's name: "<version> (commit <sha>, <go>)".
// The commit is shortened to 12 characters, as git does in long logs.
func (i Info) String() string {
	commit := i.Commit
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if i.Modified && !strings.HasSuffix(commit, "-dirty") && commit != "unknown" {
		commit += "-dirty"
	}
	return fmt.Sprintf("%s (commit %s, %s)", i.Version, commit, i.GoVersion)
}

// Print writes the --version line of command to w: "<command> <version> (commit <sha>, <go>)".
func Print(w io.Writer, command string) {
	fmt.Fprintf(w, "%s %s\n", command, Get())
}
