"""pip inside the default Sandbox with no network: a local wheel into a venv and into the user's site (run as root or as the test user); prints JSON."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import traceback
import zipfile

from agentic_bash import Sandbox


def _wheel() -> bytes:
    files = {"c10mod/__init__.py": b"VALUE = 'c10ok'\n",
             "c10mod-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: c10mod\nVersion: 1.0\n",
             "c10mod-1.0.dist-info/WHEEL": (b"Wheel-Version: 1.0\nGenerator: check10\n"
                                            b"Root-Is-Purelib: true\nTag: py3-none-any\n")}
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append("c10mod-1.0.dist-info/RECORD,,")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
        z.writestr("c10mod-1.0.dist-info/RECORD", "\n".join(record) + "\n")
    return buf.getvalue()


SCRIPT = r"""
W=/workspace/c10mod-1.0-py3-none-any.whl
python3 -m venv /tmp/v && /tmp/v/bin/pip install -q --no-index "$W"; echo "venv_pip=$?"
/tmp/v/bin/python -c 'import c10mod; print("venv", c10mod.VALUE)'
python3 -m pip install -q --no-index "$W" 2>/dev/null; echo "site_pip=$?"
cd / && python3 -c 'import c10mod; print("site", c10mod.VALUE)'
"""


def main() -> None:
    out: dict = {}
    try:
        with Sandbox() as sb:
            sb.write_file("/workspace/c10mod-1.0-py3-none-any.whl", _wheel())
            r = sb.run(SCRIPT, timeout=240)
            out["run"] = [r.stdout, r.stderr, r.exit_code]
    except Exception:  # noqa: BLE001
        out["error"] = traceback.format_exc()
    print("\n@@JSON@@" + json.dumps(out))


if __name__ == "__main__":
    main()
