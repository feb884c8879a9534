"""Package installs inside a sandbox and their manifest."""
