//go:build !linux

package discovery

// watchable: elsewhere than on Linux the follower polls (no portable way
// to tell a shared file system, whose changes a watch may not see).
const watchable = false

func localFS(string) bool { return false }

// pathOwner: elsewhere every file counts as one owner's.
func pathOwner(string) uint32 { return 0 }
