"""Filesystems: the FileSystem protocol, MemoryFS, HostFS, OverlayFS, MountFS."""
