"""HTTP front doors: the agent-sandbox runtime contract and the multi-session service."""
