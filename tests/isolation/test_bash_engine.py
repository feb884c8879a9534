"""engine='bash' (the stand-in interpreter used by benchmarks): runs scripts with the real bash inside the sandbox."""

from __future__ import annotations

import pytest


def _namespace_ok() -> bool:
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe
    return plan("namespace", probe()).level == "namespace"


@pytest.mark.skipif(not _namespace_ok(), reason="no user namespaces here")
def test_bash_engine_runs_with_stdin_and_status() -> None:
    from agentic_bash.executors.sandboxed import SandboxedExecutor
    ex = SandboxedExecutor(level="namespace", engine="bash")
    try:
        r = ex.run("echo hi; cat; exit 3", stdin=b"from stdin\n")
        assert (r.stdout, r.exit_code) == ("hi\nfrom stdin\n", 3)
        assert ex.run("echo $BASH_VERSION").stdout.startswith("5.")
    finally:
        ex.close()
