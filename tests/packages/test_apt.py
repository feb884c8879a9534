"""The apt shim's parsing of apt's own output and options (the install itself: integration/)."""

from __future__ import annotations

from agentic_bash.packages.apt import _INST, _find_deb, _quiet_level, _split_args


def test_inst_lines_of_apt_simulation() -> None:
    m = _INST.match("Inst libtext-charwidth-perl (0.04-11 Debian:12.15/oldstable [amd64])")
    assert m is not None and m.group(1, 2, 3, 5) == ("libtext-charwidth-perl", None, "0.04-11", "amd64")
    m = _INST.match("Inst bash [5.2.15-2+b2] (5.2.15-2+b7 Debian-Security:12/stable-security [amd64]) []")
    assert m is not None and m.group(1, 2, 3, 5) == ("bash", "5.2.15-2+b2", "5.2.15-2+b7", "amd64")
    m = _INST.match("Inst libc6:i386 (1:2.36-9 Debian:12 [i386])")
    assert m is not None and m.group(1, 3, 5) == ("libc6:i386", "1:2.36-9", "i386")
    assert _INST.match("Conf sl (5.02-1+b1 Debian:12.15/oldstable [amd64])") is None


def test_options_and_words() -> None:
    opts, words = _split_args(["apt-get", "-y", "-o", "Acquire::Retries=3", "install",
                               "--no-install-recommends", "sl", "cowsay=3.03"])
    assert opts == ["-y", "-o", "Acquire::Retries=3", "--no-install-recommends"]
    assert words == ["install", "sl", "cowsay=3.03"]
    assert _split_args(["apt", "install", "--", "-weird"])[1] == ["install", "-weird"]


def test_quiet_levels_follow_apt() -> None:
    assert [_quiet_level(o) for o in (["-q"], ["-qq"], ["-yqq"], ["-q=2"], ["--quiet", "--quiet"], ["-y"])] \
        == [1, 2, 2, 2, 2, 0]


def test_downloaded_archive_lookup_quotes_epochs(tmp_path) -> None:
    (tmp_path / "libc6_1%3a2.36-9_amd64.deb").write_bytes(b"x")
    (tmp_path / "sl_5.02-1+b1_amd64.deb").write_bytes(b"x")
    assert _find_deb(str(tmp_path), "libc6:amd64", "1:2.36-9").endswith("libc6_1%3a2.36-9_amd64.deb")
    assert _find_deb(str(tmp_path), "sl", "5.02-1+b1").endswith("sl_5.02-1+b1_amd64.deb")
    assert _find_deb(str(tmp_path), "sl", "9") is None
