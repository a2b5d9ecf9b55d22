package discovery

import "golang.org/x/sys/unix"

// watchable: inotify reports changes of local directories.
const watchable = true

// localFS reports whether dir is on a file system only this host writes
// to, where inotify sees every change. Any other (NFS, CIFS, FUSE, Ceph,
// Lustre, a type not known here) is polled: inotify does not see what
// other hosts write there.
func localFS(dir string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false
	}
	// The magic numbers are 32 bits; the field is wider on 64-bit
	// platforms, narrower (and signed) on some 32-bit ones.
	switch uint32(st.Type) { //nolint:gosec // truncation is the point
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC,
		unix.TMPFS_MAGIC, unix.OVERLAYFS_SUPER_MAGIC, unix.RAMFS_MAGIC,
		unix.F2FS_SUPER_MAGIC, unix.REISERFS_SUPER_MAGIC, unix.MSDOS_SUPER_MAGIC,
		unix.EXFAT_SUPER_MAGIC, unix.BCACHEFS_SUPER_MAGIC,
		zfsSuperMagic, jfsSuperMagic:
		return true
	}
	return false
}

// Magic numbers x/sys does not name (from the file systems' sources).
const (
	zfsSuperMagic = 0x2fc12fc1
	jfsSuperMagic = 0x3153464a
)

// pathOwner returns the uid of the file at path (0 if it cannot be read).
func pathOwner(path string) uint32 {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return 0
	}
	return st.Uid
}
