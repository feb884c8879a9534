"""Where a script runs: in this process (virtual/host) or inside a sandbox process."""
