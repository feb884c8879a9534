"""Sandboxed mode on the real kernel, as root and as an unprivileged user: escapes must fail."""

from __future__ import annotations

import os

import pytest

from _support import PIP_PACKAGE, pypi_reachable, sandbox_supported

ok, why = sandbox_supported()
pytestmark = [pytest.mark.skipif(not ok, reason=f"kernel sandbox unavailable: {why}"),
              pytest.mark.slow, pytest.mark.timeout(600)]

IDENTITIES = ["root", "user"]
_cache: dict[str, dict] = {}


@pytest.fixture(params=IDENTITIES)
def obs(request: pytest.FixtureRequest, token: str) -> dict:
    who = request.param
    if who not in _cache:
        runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
        args = ["checks", f"{token}{who}"]
        if pypi_reachable():
            args += ["--pip", PIP_PACKAGE]
        _cache[who] = runner.battery(*args)
    return _cache[who]


def test_report_lists_what_the_plan_promised(obs: dict) -> None:
    from agentic_bash.isolation.plan import plan
    from agentic_bash.isolation.probe import probe

    p = plan("namespace", probe(), network="public")  # the default network since #12
    rep = obs["report"]
    want = {m for m in p.mechanisms if p.applies(m)}
    assert set(rep["enforced"]) == want, obs["report_str"]
    assert {"user_namespace", "mount_namespace", "pid_namespace", "overlay", "no_new_privs",
            "caps_dropped"} <= set(rep["enforced"])
    assert rep["mechanisms"]["network_namespace"] == "enforced"
    assert rep["mechanisms"]["network_proxy"] == "enforced"


def test_builtin_written_file_read_by_native_python(obs: dict) -> None:
    assert obs["py42"]["out"] == "42\n", obs["py42"]


def test_writes_never_reach_the_host(obs: dict) -> None:
    assert obs["writes_host"] == []
    inside = obs["writes_inside"]["out"]
    for d in ("/tmp", "/workspace", "/var/tmp"):
        assert f"ok:{d}\n" in inside
    if obs["uid"] == 0:  # copy-on-write system dirs as root; read-only otherwise
        assert "ok:/etc\n" in inside and "ok:/usr\n" in inside
    else:
        assert "ok:/etc\n" not in inside and "ok:/usr/local\n" not in inside


def test_secrets_are_unreadable(obs: dict) -> None:
    assert obs["shadow"]["code"] != 0
    first = obs["shadow_host_first_line"]
    assert not first or first not in obs["shadow"]["out"]
    assert obs["ssh"]["code"] != 0 and "sshsecret" not in obs["ssh"]["out"]


def test_proc_shows_only_the_sandbox(obs: dict) -> None:
    pids = [int(x) for x in obs["proc"]["out"].split() if x.isdigit()]
    assert pids and max(pids) < 1000 and len(pids) < 20, obs["proc"]
    ps = obs["ps"]["out"].splitlines()
    assert 2 <= len(ps) < 10, ps
    assert any(line.split()[0] == "1" for line in ps)


@pytest.mark.parametrize("key", ["unshare", "unshare_user", "mount", "outside"])
def test_privileged_operations_fail(obs: dict, key: str) -> None:
    assert obs[key]["code"] != 0, obs[key]


def test_ptrace_of_a_sibling_fails(obs: dict) -> None:
    assert obs["ptrace"]["out"].split()[:2] == ["-1", "1"], obs["ptrace"]  # -1, EPERM


def test_symlink_and_hardlink_tricks_fail(obs: dict) -> None:
    out = obs["symlink"]["out"]
    first = obs["shadow_host_first_line"]
    assert "sshsecret" not in out and (not first or first not in out)
    assert "sandbox" not in out  # /proc/1/root/etc/hostname stays unreadable
    assert "Invalid cross-device link" in obs["hardlink"]["err"] or \
        "Operation not permitted" in obs["hardlink"]["err"]
    assert "h1" not in obs["hardlink"]["out"].split()


def test_no_host_environment(obs: dict) -> None:
    assert obs["secret"] not in obs["env"]["out"]
    assert "AGB_HOST_SECRET" not in obs["env"]["out"]
    assert "TERM=dumb" in obs["env"]["out"] and "DEBIAN_FRONTEND=noninteractive" in obs["env"]["out"]


def test_capabilities_dropped_and_filters_on(obs: dict) -> None:
    out = obs["capeff"]["out"]
    assert "CapEff:\t0000000000000000" in out and "CapBnd:\t0000000000000000" in out
    assert "NoNewPrivs:\t1" in out
    if "seccomp" in obs["report"]["enforced"]:
        assert "Seccomp:\t2" in out


def test_timeout_kills_everything_and_session_answers(obs: dict) -> None:
    t = obs["timeout"]
    assert t["timed_out"] and t["code"] == 124
    assert obs["timeout_wall"] < 3.0
    assert obs["timeout_left"] == []
    assert obs["after_timeout"]["out"] == "alive\n"


def test_nohup_dies_with_close(obs: dict) -> None:
    assert obs["bg"]["out"] == "started\n"
    assert len(obs["nohup_before_close"]) == 1
    assert obs["nohup_after_close"] == []
    assert obs["left_after_close"] == []


def test_runner_death_raises_sandbox_crashed_then_restarts(obs: dict) -> None:
    assert obs["kill_runner"]["out"] == "after\n", obs["kill_runner"]
    assert obs["crash"] == {"exc": "SandboxCrashed"}
    assert obs["crash_again"] == {"stdout": "again\n", "restarted": True}


def test_pip_install_inside_only(obs: dict) -> None:
    if "pip" not in obs:
        pytest.skip("pypi.org not reachable from this machine")
    assert obs["pip"]["code"] == 0, obs["pip"]
    assert obs["pip_import"]["code"] == 0, obs["pip_import"]
    path = obs["pip_import"]["out"].strip()
    assert path.startswith("/usr/local/" if obs["uid"] == 0 else "/home/user/.local/"), path
    assert not obs["host_site_has_pkg"]


@pytest.mark.parametrize("who", IDENTITIES)
def test_no_leaks_after_200_cycles(request: pytest.FixtureRequest, who: str) -> None:
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    r = runner.battery("leak", "200")
    b, a = r["before"], r["after"]
    assert a["descendants"] == b["descendants"] == 0, r
    assert a["mounts"] == b["mounts"], r
    assert a["session_dirs"] == b["session_dirs"], r
    assert a["fds"] <= b["fds"], r
    assert a["threads"] <= b["threads"], r
    assert a.get("cgroups", 0) == b.get("cgroups", 0) == 0, r  # the limits' groups (#11)


def test_host_site_packages_untouched() -> None:
    d = "/usr/local/lib/python3.11/dist-packages"
    if os.path.isdir(d):
        assert PIP_PACKAGE not in os.listdir(d)


@pytest.mark.parametrize("who", IDENTITIES)
def test_landlock_level_confines_writes_and_reads(request: pytest.FixtureRequest, who: str,
                                                  token: str) -> None:
    from agentic_bash.isolation.probe import probe

    if not probe().landlock_abi:
        pytest.skip("kernel without Landlock")
    runner = request.getfixturevalue("as_root" if who == "root" else "as_user")
    o = runner.battery("landlock", token + who)
    assert "landlock" in o["report"]["enforced"] and "user_namespace" not in o["report"]["enforced"]
    assert o["py42"]["out"] == "42\n"
    assert "a.py" in o["in_ws"]  # the workspace is a real host directory at this level
    assert o["written_outside"] == []
    assert o["read_home"]["code"] != 0 and o["read_home"]["out"] == ""
    assert "CapEff:\t0000000000000000" in o["capeff"]["out"]


def test_network_deny_has_only_loopback() -> None:
    from agentic_bash.executors.sandboxed import SandboxedExecutor
    from agentic_bash.isolation.probe import probe

    if not probe().network_namespace:
        pytest.skip("no network namespaces")
    with SandboxedExecutor(isolation="namespace", network="deny") as sb:
        assert "network_namespace" in sb.isolation.enforced
        r = sb.run("python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); "
                   "s.listen(); socket.create_connection(s.getsockname()); print('lo')\"; "
                   "python3 -c \"import socket; socket.create_connection(('1.1.1.1', 53), 3)\"")
        assert r.stdout == "lo\n"
        assert r.exit_code != 0  # nothing but loopback


def test_strict_and_report_in_process() -> None:
    from agentic_bash.executors.sandboxed import SandboxedExecutor

    with SandboxedExecutor(isolation="namespace", strict=True) as sb:
        assert {"user_namespace", "pid_namespace", "seccomp", "caps_dropped"} <= sb.isolation.enforced
        assert "enforced" in str(sb.isolation)
        sb.write_file("/workspace/x.txt", b"data")
        assert sb.read_file("/workspace/x.txt") == b"data"
        assert sb.exists("/workspace/x.txt")
        with pytest.raises(FileNotFoundError):
            sb.read_file("/workspace/missing")
        r = sb.run("cat /workspace/x.txt; cd /tmp")
        assert r.stdout == "data" and r.cwd == "/tmp"
        assert sb.run("pwd").stdout == "/tmp\n"  # shell state persists between runs


def test_native_writes_are_tracked(tmp_path) -> None:
    from agentic_bash.executors.sandboxed import SandboxedExecutor

    (tmp_path / "existing").write_text("old")
    (tmp_path / "gone").write_text("x")
    with SandboxedExecutor(isolation="namespace",
                           mounts={"/workspace": (str(tmp_path), "cow")}) as sb:
        r = sb.run("python3 -c 'open(\"n.txt\", \"w\").write(\"x\")'; /bin/rm gone; "
                   "/bin/sed -i s/old/new/ existing; /usr/bin/touch /tmp/t")
        assert {"/workspace/n.txt", "/tmp/t"} <= set(r.files_created)
        assert "/workspace/existing" in r.files_modified
        assert "/workspace/gone" in r.files_deleted
        assert sb.run("cat existing").stdout == "new"
    assert (tmp_path / "existing").read_text() == "old"  # copy-on-write: host untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing", "gone"]


def test_layer_export_and_restore_into_a_new_sandbox() -> None:
    import io
    import tarfile

    from agentic_bash.executors.sandboxed import SandboxedExecutor

    with SandboxedExecutor(isolation="namespace") as sb:
        sb.run("echo hi > a.txt; mkdir -p d/e; python3 -c 'open(\"d/e/n\", \"w\").write(\"n\")'; "
               "ln -s a.txt l; echo t > /tmp/t")
        data = sb.export_layer(extra_members={".agentic-bash/state.json": b"{}"})
    names = tarfile.open(fileobj=io.BytesIO(data)).getnames()
    assert {"workspace/a.txt", "workspace/d/e/n", "workspace/l", "tmp/t",
            ".agentic-bash/state.json"} <= set(names)
    assert not any(n in ("workspace", "tmp", "home") for n in names)  # mount points stay out
    with SandboxedExecutor(isolation="namespace", layer_tar=data) as sb:
        assert sb.layer_extras == {".agentic-bash/state.json": b"{}"}
        assert sb.run("cat a.txt d/e/n l /tmp/t").stdout == "hi\nnhi\nt\n"


def test_seccomp_refusals_are_itemised() -> None:
    from agentic_bash.executors.sandboxed import SandboxedExecutor
    from agentic_bash.isolation.probe import probe

    caps = probe()
    if not (caps.seccomp_user_notif and caps.seccomp_library):
        pytest.skip("no seccomp user notification here")
    with SandboxedExecutor(isolation="namespace") as sb:
        assert "itemised in Result.violations" in str(sb.isolation)
        r = sb.run("unshare -r true; python3 -c 'import socket; socket.socket(40, 1)'; echo done")
        assert r.stdout == "done\n"
        details = [v.detail for v in r.violations]
        assert any(d.startswith("unshare by unshare") for d in details), details
        assert any(d.startswith("socket(family=40)") for d in details), details
        assert all(v.kind == "syscall" for v in r.violations)
        assert sb.run("echo clean").violations == ()


@pytest.mark.parametrize("as_tar", [False, True])
def test_base_rootfs_dir_or_tar(tmp_path, monkeypatch, as_tar: bool) -> None:
    import shutil
    import tarfile

    from agentic_bash.executors.sandboxed import SandboxedExecutor

    bb = shutil.which("busybox")
    if not bb:
        pytest.skip("needs a static busybox (apt-get install busybox-static)")
    img = tmp_path / "img"
    (img / "bin").mkdir(parents=True)
    (img / "etc").mkdir()
    shutil.copy(bb, img / "bin" / "busybox")
    for c in ("sh", "ls", "cat", "id"):
        (img / "bin" / c).symlink_to("busybox")
    (img / "etc" / "image-release").write_text("tiny\n")
    base = str(img)
    if as_tar:
        base = str(tmp_path / "img.tar")
        with tarfile.open(base, "w") as tf:
            tf.add(img, ".")
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with SandboxedExecutor(isolation="namespace", base=base) as sb:
        r = sb.run("cat /etc/image-release; ls /bin; echo hi > f; cat f")
        assert r.stdout.startswith("tiny\nbusybox\n") and r.stdout.endswith("hi\n"), r
        assert sb.run("ls /usr/bin/python3").exit_code != 0  # the host's /usr is not there
    assert not (img / "f").exists()


def test_through_the_public_sandbox_api(tmp_path) -> None:
    from agentic_bash import Sandbox

    (tmp_path / "in.txt").write_text("from host\n")
    sb = Sandbox(isolation="namespace", mounts={"/workspace": str(tmp_path)})
    try:
        r = sb.run("cat in.txt; echo out > out.txt; python3 -c 'print(6*7)'")
        assert r.stdout == "from host\n42\n", r
        assert "/workspace/out.txt" in r.files_created
        assert sb.read_file("out.txt") == b"out\n"
    finally:
        sb.close()
    assert not (tmp_path / "out.txt").exists()  # default mount mode is copy-on-write
