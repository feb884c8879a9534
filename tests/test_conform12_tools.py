"""The agent tools' list_files on a directory larger than a listing: the count it states is true."""

from __future__ import annotations

from agentic_bash import Sandbox
from agentic_bash.tools.handlers import handle


def test_list_files_says_when_the_directory_holds_more_than_it_lists():
    with Sandbox(isolation="virtual") as sb:
        r = sb.run("mkdir many few && cd many && seq 1 10005 | xargs touch && cd ../few && touch a b")
        assert r.exit_code == 0, r.stderr
        big = handle(sb, "list_files", {"path": "/workspace/many"})
        # before: "/workspace/many: 10000 entries" for a directory of 10005
        assert big.startswith("/workspace/many: more than 10000 entries; the first 10000 by name:")
        assert handle(sb, "list_files", {"path": "/workspace/few"}).splitlines()[0] == "/workspace/few: 2 entries"
