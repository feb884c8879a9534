"""The process-wide parse caches are bounded by the source characters they hold, not only by entry count."""
from __future__ import annotations

from agentic_bash import Sandbox
from agentic_bash.executors import inprocess
from agentic_bash.shell import parser


def test_sized_cache_evicts_least_recently_used_by_characters() -> None:
    calls: list[str] = []

    @parser.sized_cache(budget=10, entries=100)
    def f(src: str) -> str:
        calls.append(src)
        return src.upper()

    assert f("aaaa") == "AAAA" and f("bbbb") == "BBBB" and f.held() == 8
    assert f("aaaa") == "AAAA" and calls == ["aaaa", "bbbb"]  # a hit, now the most recent
    f("cc")  # 10 characters: all three fit
    f("dddd")  # 14: the least recently used (bbbb) goes
    assert f.held() == 10
    f("aaaa")
    f("bbbb")
    assert calls == ["aaaa", "bbbb", "cc", "dddd", "bbbb"]
    assert f("x" * 11) == "X" * 11 and f.held() <= 10  # larger than the budget: not kept
    f.cache_clear()
    assert f.held() == 0


def test_many_distinct_big_evals_do_not_pin_their_trees() -> None:
    # each eval text is ~59 KB and distinct; count-bounded caches kept all of them (100 of
    # them pinned ~450 MiB of trees)
    parser._parse_cached.cache_clear()
    with Sandbox(isolation="virtual") as sb:
        r = sb.run('s=$(printf "echo %s;" {1..6000}); for i in {1..40}; do eval "$s # $i" >/dev/null; done; '
                   'echo ${#s}', timeout=120)
        assert r.stdout == "58893\n" and r.exit_code == 0
        for i in range(40):  # distinct whole scripts of ~30 KB go through run()'s own cache
            assert sb.run(f": {'x' * 30000} {i}").exit_code == 0
    assert parser._parse_cached_at.held() <= parser.CACHE_BUDGET
    # (the evals went through this cache: 40 x 59 KB is past its budget, so the bound acted)
    assert 0 < parser._parse_cached.held() <= parser.CACHE_BUDGET
    assert parser._parse_cached_w.held() <= parser.CACHE_BUDGET
    for extglob in (0, 1):
        held = sum(map(len, inprocess._TREES[extglob]))
        assert held == inprocess._TREES_HELD[extglob] <= parser.CACHE_BUDGET


def test_run_cache_evicts_in_batches_within_its_bounds() -> None:
    """run()'s cache of whole scripts drops its oldest entries an eighth at a time when
    full: it never holds more than _TREES_MAX entries, its character count stays exact,
    and the newest entries stay."""
    cache = inprocess._TREES[0]
    cache.clear()
    inprocess._TREES_HELD[0] = 0
    n = inprocess._TREES_MAX + 700
    for i in range(n):
        inprocess._whole_script(f"echo {i} | cat", False)
        assert len(cache) <= inprocess._TREES_MAX
    assert f"echo {n - 1} | cat" in cache and "echo 0 | cat" not in cache
    assert sum(map(len, cache)) == inprocess._TREES_HELD[0] <= parser.CACHE_BUDGET
