"""OS isolation mechanisms (namespaces, overlayfs, Landlock, seccomp): probed, planned, reported."""
