"""Checksums and encodings: md5sum sha*sum b2sum cksum base64 base32."""

from __future__ import annotations

import base64 as _b64
import binascii
import hashlib
import re

from ._args import read_bounded, stdio, OptError, file_error, iter_chunks, open_input, parse_opts, quote, quotef, try_help
from .base import CommandContext, command

_ALGOS = {"md5sum": "md5", "sha1sum": "sha1", "sha224sum": "sha224", "sha256sum": "sha256",
          "sha384sum": "sha384", "sha512sum": "sha512", "b2sum": "blake2b"}
_TAGS = {"md5": "MD5", "sha1": "SHA1", "sha224": "SHA224", "sha256": "SHA256", "sha384": "SHA384",
         "sha512": "SHA512", "blake2b": "BLAKE2b"}


def _new_hash(algo: str, bits: int | None = None):  # noqa: ANN202
    if algo == "blake2b":
        return hashlib.blake2b(digest_size=(bits or 512) // 8)
    return hashlib.new(algo)


def _digest_stream(ctx: CommandContext, f, algo: str, bits: int | None) -> str:  # noqa: ANN001
    h = _new_hash(algo, bits)
    n = 0
    for chunk in iter_chunks(f, 1 << 16):
        h.update(chunk)
        n += 1
        if n & 255 == 0:
            ctx.budget.check()
    return h.hexdigest()


def _escape_name(name: str) -> tuple[str, bool]:
    if "\\" in name or "\n" in name or "\r" in name:
        return name.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r"), True
    return name, False


@command(*_ALGOS, usage="md5sum [OPTION]... [FILE]...",
         help="Print or check MD5 (128-bit) checksums.")
@stdio
def digest_sum(ctx: CommandContext, argv: list[str]) -> int:
    prog = argv[0].rsplit("/", 1)[-1]
    algo = _ALGOS.get(prog, "md5")
    spec = "bcl:tzw" if algo == "blake2b" else "bctzw"
    try:
        opts, files = parse_opts(ctx, argv, spec, {
            "binary": "b", "check": "c", "tag": None, "text": "t", "zero": "z", "quiet": None,
            "status": None, "strict": None, "warn": "w", "ignore-missing": None, "length": "l"},
            status=1)
    except OptError as e:
        return e.status
    check = tag = binary = zero = quiet = status_only = strict = warn = ignore_missing = False
    mode_given = False
    bits = None
    for k, v in opts:
        if k == "c":
            check = True
        elif k == "tag":
            tag = True
        elif k == "b":
            binary = mode_given = True
        elif k == "t":
            binary = False
            mode_given = True
        elif k == "z":
            zero = True
        elif k in ("quiet", "status", "w"):
            # (GNU: the last of --quiet/--status/--warn wins)
            quiet, status_only, warn = k == "quiet", k == "status", k == "w"
        elif k == "strict":
            strict = True
        elif k == "ignore-missing":
            ignore_missing = True
        elif k == "l":
            try:
                bits = int(v or "")
            except ValueError:
                ctx.error(f"invalid length: {quote(ctx, v or '')}")
                return 1
            if bits % 8 or not 8 <= bits <= 512:
                ctx.error(f"invalid length: {quote(ctx, v or '')}")
                ctx.stderr.write(f"{prog}: length is not a multiple of 8\n".encode() if bits % 8 else b"")
                return 1
    usage = ("the --zero option is not supported when verifying checksums" if zero and check else
             "the --tag option is meaningless when verifying checksums" if tag and check else
             "the --binary and --text options are meaningless when verifying checksums"
             if mode_given and check else "")
    if not usage and not check:
        for flag, on in (("ignore-missing", ignore_missing), ("status", status_only), ("warn", warn),
                         ("quiet", quiet), ("strict", strict)):
            if on:
                usage = f"the --{flag} option is meaningful only when verifying checksums"
                break
    if usage:
        ctx.error(usage)
        try_help(ctx)
        return 1
    if check:
        return _check(ctx, files or ["-"], algo, bits, quiet, status_only, strict, warn, ignore_missing)
    status = 0
    out = []
    for name in files or ["-"]:
        try:
            f = open_input(ctx, name)
        except OSError as e:
            ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))  # error() flushes stdout
            out = []
            file_error(ctx, e, name)
            status = 1
            continue
        try:
            d = _digest_stream(ctx, f, algo, bits)
        except IsADirectoryError as e:
            ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))  # error() flushes stdout
            out = []
            file_error(ctx, e, name)
            status = 1
            continue
        finally:
            f.close()
        shown, esc = _escape_name(name) if not zero else (name, False)
        bs = "\\" if esc else ""
        if tag:
            t = _TAGS[algo] + (f"-{bits}" if algo == "blake2b" and bits and bits != 512 else "")
            line = f"{bs}{t} ({shown}) = {d}"
        else:
            line = f"{bs}{d} {'*' if binary else ' '}{shown}"
        out.append(line + ("\0" if zero else "\n"))
        if len(out) > 256:
            ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))
            out = []
    ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))
    return status


def _check(ctx: CommandContext, lists: list[str], algo: str, bits: int | None, quiet: bool,
           status_only: bool, strict: bool, warn: bool, ignore_missing: bool) -> int:
    prog = ctx.name
    hexlen = ((bits or 512) // 4) if algo == "blake2b" else _new_hash(algo).digest_size * 2
    tag = _TAGS[algo]
    line_re = re.compile(r"^(\\?)([0-9a-fA-F]{%d}) [ *](.*)$" % hexlen)
    tag_re = re.compile(r"^(\\?)%s(?:-\d+)? \((.*)\) = ([0-9a-fA-F]+)$" % re.escape(tag))
    status = 0
    for lst in lists:
        try:
            f = open_input(ctx, lst)
        except OSError as e:
            file_error(ctx, e, lst)
            status = 1
            continue
        try:
            text = read_bounded(ctx, f).decode("utf-8", "surrogateescape")
        except IsADirectoryError as e:
            file_error(ctx, e, lst)
            status = 1
            continue
        finally:
            f.close()
        bad_fmt = failed = unreadable = 0
        good = 0
        out: list[str] = []
        for lineno, line in enumerate(text.split("\n"), 1):
            if line == "" :
                continue
            if line.startswith("#"):
                continue
            m = line_re.match(line)
            if m:
                esc, want, name = m.group(1), m.group(2), m.group(3)
            else:
                m2 = tag_re.match(line)
                if not m2:
                    bad_fmt += 1
                    if warn:
                        ctx.error(f"{quotef(lst)}: {lineno}: improperly formatted {tag} checksum line")
                    continue
                esc, name, want = m2.group(1), m2.group(2), m2.group(3)
            if esc:
                name = name.replace("\\n", "\n").replace("\\r", "\r").replace("\\\\", "\\")
            try:
                g = open_input(ctx, name)
            except OSError as e:
                if ignore_missing and isinstance(e, FileNotFoundError):
                    continue
                file_error(ctx, e, name)
                unreadable += 1
                if not status_only:
                    out.append(f"{name}: FAILED open or read\n")
                continue
            try:
                d = _digest_stream(ctx, g, algo, bits)
            except IsADirectoryError as e:
                file_error(ctx, e, name)
                unreadable += 1
                if not status_only:
                    out.append(f"{name}: FAILED open or read\n")
                continue
            finally:
                g.close()
            if d.lower() == want.lower():
                good += 1
                if not quiet and not status_only:
                    out.append(f"{name}: OK\n")
            else:
                failed += 1
                if not status_only:
                    out.append(f"{name}: FAILED\n")
            ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))
            out = []
        ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))
        if good == 0 and failed == 0 and unreadable == 0:
            shown = quotef(lst if lst != "-" else "standard input")
            if bad_fmt or not ignore_missing or not text.strip():
                ctx.error(f"{shown}: no properly formatted checksum lines found")
            else:
                ctx.error(f"{shown}: no file was verified")  # --ignore-missing skipped them all
            status = 1
            continue
        if not status_only:
            if bad_fmt:
                ctx.error(f"WARNING: {bad_fmt} line{'s are' if bad_fmt > 1 else ' is'} improperly formatted")
            if unreadable:
                ctx.error(f"WARNING: {unreadable} listed file{'s' if unreadable > 1 else ''} could not be read")
            if failed:
                ctx.error(f"WARNING: {failed} computed checksum{'s' if failed > 1 else ''} did NOT match")
        if failed or unreadable or (strict and bad_fmt):
            status = 1
    _ = prog
    return status


# -- cksum (POSIX CRC) ------------------------------------------------------------------------

def _crc_table() -> list[int]:
    t = []
    for i in range(256):
        c = i << 24
        for _ in range(8):
            c = ((c << 1) ^ 0x04C11DB7) if c & 0x80000000 else (c << 1)
        t.append(c & 0xFFFFFFFF)
    return t


_CRC = _crc_table()


def posix_crc(data: bytes, crc: int = 0) -> int:
    for b in data:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC[(crc >> 24) ^ b]
    return crc


def _crc_finish(crc: int, length: int) -> int:
    n = length
    while n:
        crc = ((crc << 8) & 0xFFFFFFFF) ^ _CRC[(crc >> 24) ^ (n & 0xFF)]
        n >>= 8
    return (~crc) & 0xFFFFFFFF


def _read_operand(ctx: CommandContext, files: list[str]) -> bytes | None:
    """base64/base32/basenc's one input (a file or ``-``), read whole; None after reporting
    an extra operand or a read error."""
    if len(files) > 1:
        ctx.error(f"extra operand {quote(ctx, files[1])}")
        try_help(ctx)
        return None
    name = files[0] if files else "-"
    try:
        f = open_input(ctx, name)
        try:
            return read_bounded(ctx, f, None)
        finally:
            f.close()
    except IsADirectoryError:
        ctx.error("read error: Is a directory")  # GNU basenc names no file here
    except OSError as e:
        file_error(ctx, e, name)
    return None


@command("cksum", usage="cksum [OPTION]... [FILE]...", help="Print or verify checksums.\nBy default use the 32 bit CRC algorithm.")
@stdio
def cksum(ctx: CommandContext, argv: list[str]) -> int:
    try:
        opts, files = parse_opts(ctx, argv, "a:l:", {
            "algorithm": "a", "length": "l", "untagged": None, "base64": None, "raw": None,
            "tag": None, "zero": None, "debug": None, "check": None}, status=1)
    except OptError as e:
        return e.status
    algo = "crc"
    untagged = False
    for k, v in opts:
        if k == "a":
            from ._args import argmatch
            v = argmatch(ctx, v, "--algorithm", [[x] for x in ("bsd", "sysv", "crc", "md5", "sha1", "sha224",
                                                               "sha256", "sha384", "sha512", "blake2b", "sm3")])
            if v is None:
                return 1
            algo = v or "crc"
        elif k == "untagged":
            untagged = True
    status = 0
    out = []
    for name in files or ["-"]:
        try:
            f = open_input(ctx, name)
        except IsADirectoryError:
            if algo == "crc":
                out.append(f"{_crc_finish(0, 0)} 0 {name}\n")
            else:
                ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))
                out = []
                ctx.error(f"{quotef(name)}: Is a directory")
                status = 1
            continue
        except OSError as e:
            ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))  # error() flushes stdout
            out = []
            file_error(ctx, e, name)
            status = 1
            continue
        try:
            if algo in ("crc", "sysv", "bsd"):
                crc = 0
                length = 0
                s_sum = 0
                b_sum = 0
                for chunk in iter_chunks(f, 1 << 16):
                    length += len(chunk)
                    if algo == "crc":
                        crc = posix_crc(chunk, crc)
                    elif algo == "sysv":
                        s_sum += sum(chunk)
                    else:
                        for b in chunk:
                            b_sum = ((b_sum >> 1) + ((b_sum & 1) << 15) + b) & 0xFFFF
                    ctx.budget.check()
                label = "" if name == "-" and not files else f" {name}"
                if algo == "crc":
                    out.append(f"{_crc_finish(crc, length)} {length}{label}\n")
                elif algo == "sysv":
                    r = (s_sum & 0xFFFF) + ((s_sum & 0xFFFFFFFF) >> 16)
                    r = (r & 0xFFFF) + (r >> 16)
                    out.append(f"{r} {-(-length // 512)}{label}\n")
                else:
                    out.append(f"{b_sum:05d} {-(-length // 1024):5d}{label}\n")
            else:
                d = _digest_stream(ctx, f, algo, None)
                if untagged:
                    out.append(f"{d}  {name}\n")
                else:
                    out.append(f"{_TAGS.get(algo, algo.upper())} ({name}) = {d}\n")
        finally:
            f.close()
    ctx.stdout.write("".join(out).encode("utf-8", "surrogateescape"))
    return status


# -- base64 / base32 --------------------------------------------------------------------------

_ENC_PIECE = 30720  # input bytes encoded at once (GNU's block): whole base64 (3), base32 (5) and z85 (4) groups


_GARBAGE: dict[str, bytes] = {}


def _garbage(kind: str) -> bytes:
    """The bytes ``--ignore-garbage`` drops for ``kind``: every byte outside its alphabet."""
    g = _GARBAGE.get(kind)
    if g is None:
        keep = re.compile(rb"[" + _ALPHABETS[kind] + rb"]")
        g = _GARBAGE[kind] = bytes(b for b in range(256) if not keep.fullmatch(bytes([b])))
    return g


def _basenc(ctx: CommandContext, argv: list[str], kind: str | None) -> int:
    """base64, base32 (``kind`` given) and basenc (``kind`` None: an option names it)."""
    longs: dict[str, str | None] = {"decode": "d", "ignore-garbage": "i", "wrap": "w"}
    if kind is None:
        longs.update({k: None for k in _BASENC_KINDS})
    try:
        opts, files = parse_opts(ctx, argv, "diw:", longs, status=1)
    except OptError as e:
        return e.status
    decode = garbage = False
    wrap = 76
    for k, v in opts:
        if k in _BASENC_KINDS:
            kind = k  # the last encoding named wins
        elif k == "d":
            decode = True
        elif k == "i":
            garbage = True
        elif k == "w":
            try:
                wrap = int(v or "")
                if wrap < 0:
                    raise ValueError
            except ValueError:
                ctx.error(f"invalid wrap size: {quote(ctx, v or '')}")
                return 1
    if kind is None:
        ctx.error("missing encoding type")
        try_help(ctx)
        return 1
    data = _read_operand(ctx, files)
    if data is None:
        return 1
    if not decode:
        # encoded and wrapped 60 KiB of input at a time, the deadline checked between: the
        # whole encoding and its wrapped copy held 3x the input (base64 -w0 of 100 MB: +223
        # MiB in 2 s), base2's one string per input byte 8x, and z85's loop had no check
        col = 0
        out = ctx.stdout
        for k in range(0, len(data), _ENC_PIECE):
            enc = _basenc_encode(kind, data[k:k + _ENC_PIECE])
            if enc is None:
                # z85 of a length not a multiple of 4: GNU has written the whole blocks
                # before the one holding the end (no newline after a partial line)
                ctx.error("invalid input (length must be multiple of 4 characters)")
                return 1
            if not wrap:
                out.write(enc)
            else:
                parts = []
                i = 0
                if col:
                    i = min(wrap - col, len(enc))
                    parts.append(enc[:i])
                    col += i
                    if col == wrap:
                        parts.append(b"\n")
                        col = 0
                while i < len(enc):
                    seg = enc[i:i + wrap]
                    parts.append(seg)
                    i += len(seg)
                    if len(seg) == wrap:
                        parts.append(b"\n")
                    else:
                        col = len(seg)
                out.write(b"".join(parts))
            ctx.budget.check()
        if col:
            out.write(b"\n")
        return 0
    # (-i: one translate; re.sub made a replacement per garbage byte in one C call that held
    # the GIL, 8.7 s past a 2 s deadline for 50 MB of zeros)
    clean = data.translate(None, _garbage(kind)) if garbage else data.replace(b"\n", b"")
    out, ok = _basenc_decode(kind, clean)
    # GNU writes what it decoded before a bad quantum, then the error
    ctx.stdout.write(out)
    if not ok:
        ctx.error("invalid input")
        return 1
    return 0


_B64 = {c: i for i, c in enumerate(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")}


def _b64_quanta(data: bytes) -> tuple[bytes, bool]:
    """GNU's base64 decoder: 4-character quanta, each complete (``xx==``, ``xxx=`` or
    ``xxxx``); padding may end any quantum. On a bad one, what it decoded so far is kept."""
    out = bytearray()
    A = _B64
    for i in range(0, len(data), 4):
        q = data[i:i + 4]
        if len(q) < 2 or q[0] not in A or q[1] not in A:
            return bytes(out), False
        out.append((A[q[0]] << 2 | A[q[1]] >> 4) & 0xFF)
        if len(q) == 2:
            return bytes(out), False
        if q[2] == 61:  # '='
            if len(q) < 4 or q[3] != 61:
                return bytes(out), False
            continue
        if q[2] not in A:
            return bytes(out), False
        out.append((A[q[1]] << 4 | A[q[2]] >> 2) & 0xFF)
        if len(q) == 3:
            return bytes(out), False
        if q[3] == 61:
            continue
        if q[3] not in A:
            return bytes(out), False
        out.append((A[q[2]] << 6 | A[q[3]]) & 0xFF)
    return bytes(out), True


@command("base64", usage="base64 [OPTION]... [FILE]", help="Base64 encode or decode FILE, or standard input, to standard output.")
@stdio
def base64_cmd(ctx: CommandContext, argv: list[str]) -> int:
    return _basenc(ctx, argv, "base64")


@command("base32", usage="base32 [OPTION]... [FILE]", help="Base32 encode or decode FILE, or standard input, to standard output.")
@stdio
def base32_cmd(ctx: CommandContext, argv: list[str]) -> int:
    return _basenc(ctx, argv, "base32")


@command("shasum", usage="shasum [OPTION]... [FILE]...",
         help="Print or check SHA checksums (-a 1, 224, 256, 384 or 512; the sha*sum tools).")
def shasum(ctx: CommandContext, argv: list[str]) -> int:
    """Perl's shasum as the matching sha*sum: ``-a N`` picks the algorithm (default 1); the
    other options (-b -c -t -z -w --tag --status --quiet --strict) mean what they mean there."""
    algo = "1"
    rest: list[str] = []
    args = argv[1:]
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            rest.extend(args[i:])
            break
        val = None
        if a in ("-a", "--algorithm"):
            if i + 1 >= len(args):
                ctx.stderr.write(b"Option a requires an argument\nType shasum -h for help\n")
                return 1
            val = args[i + 1]
            i += 2
        elif a.startswith("-a") and not a.startswith("--"):
            val = a[2:]
            i += 1
        elif a.startswith("--algorithm="):
            val = a.partition("=")[2]
            i += 1
        else:
            rest.append(a)
            i += 1
            continue
        if not val.isdigit():
            ctx.stderr.write(f'Value "{val}" invalid for option a (number expected)\nType shasum -h for help\n'.encode())
            return 1
        algo = val
    if algo not in ("1", "224", "256", "384", "512"):
        ctx.stderr.write(b"shasum: Unrecognized algorithm\nType shasum -h for help\n")
        return 1
    return digest_sum(ctx, [f"sha{algo}sum"] + rest)


# -- basenc ---------------------------------------------------------------------------------

_Z85 = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_BASENC_KINDS = ("base64", "base64url", "base32", "base32hex", "base16", "base2msbf", "base2lsbf", "z85")


def _basenc_encode(kind: str, data: bytes) -> bytes | None:
    if kind == "base64":
        return _b64.b64encode(data)
    if kind == "base64url":
        return _b64.urlsafe_b64encode(data)
    if kind == "base32":
        return _b64.b32encode(data)
    if kind == "base32hex":
        return _b64.b32hexencode(data)
    if kind == "base16":
        return data.hex().upper().encode()
    if kind in ("base2msbf", "base2lsbf"):
        bits = "".join(f"{b:08b}" for b in data)
        if kind == "base2lsbf":
            bits = "".join(bits[i:i + 8][::-1] for i in range(0, len(bits), 8))
        return bits.encode()
    if len(data) % 4:
        return None  # z85 takes whole 4-byte groups
    out = bytearray()
    for i in range(0, len(data), 4):
        v = int.from_bytes(data[i:i + 4], "big")
        chunk = []
        for _ in range(5):
            v, r = divmod(v, 85)
            chunk.append(_Z85[r])
        out += bytes(reversed(chunk))
    return bytes(out)


_ALPHABETS = {"base64": rb"A-Za-z0-9+/=", "base64url": rb"A-Za-z0-9\-_=", "base32": rb"A-Z2-7=",
              "base32hex": rb"0-9A-V=", "base16": rb"0-9A-F", "base2msbf": rb"01", "base2lsbf": rb"01",
              "z85": re.escape(_Z85)}
# base32hex read as base32: 0-9A-V map onto A-Z2-7; other bytes stay as they are, so W-Z
# pass as base32 letters (coreutils 9.1's translation does the same)
_B32HEX = bytes.maketrans(b"0123456789ABCDEFGHIJKLMNOPQRSTUV", b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")


def _b32_quanta(data: bytes) -> tuple[bytes, bool]:
    """GNU's base32 decoder: 8-character quanta, each possibly padded (it goes on after a
    padded one); on a bad one, what it decoded so far is kept."""
    parts = []
    for i in range(0, len(data), 8):
        q = data[i:i + 8]
        body = q.rstrip(b"=")
        if len(q) < 8 or len(body) not in (2, 4, 5, 7, 8) or b"=" in body or re.search(rb"[^A-Z2-7]", body):
            return b"".join(parts), False
        try:
            parts.append(_b64.b32decode(q))
        except (binascii.Error, ValueError):
            return b"".join(parts), False
    return b"".join(parts), True


def _basenc_decode(kind: str, data: bytes) -> tuple[bytes, bool]:
    """-> (the bytes decoded, whether all the input was valid)."""
    if kind in ("base64", "base64url"):
        if kind == "base64url":
            if re.search(rb"[+/]", data):
                return b"", False
            data = data.translate(bytes.maketrans(b"-_", b"+/"))
        return _b64_quanta(data)
    if kind in ("base32", "base32hex"):
        return _b32_quanta(data.translate(_B32HEX) if kind == "base32hex" else data)
    if kind == "base16":
        # coreutils 9.1: upper-case digits only (-i drops lower case as garbage); the pairs
        # before a bad byte or a dangling digit are written
        m = re.match(rb"(?:[0-9A-F]{2})*", data)
        end = m.end()  # type: ignore[union-attr]
        return bytes.fromhex(data[:end].decode("ascii")), end == len(data)
    if kind in ("base2msbf", "base2lsbf"):
        if len(data) % 8 or re.search(rb"[^01]", data):
            return b"", False
        groups = [data[i:i + 8] for i in range(0, len(data), 8)]
        if kind == "base2lsbf":
            groups = [g[::-1] for g in groups]
        return bytes(int(g, 2) for g in groups), True
    if len(data) % 5:
        return b"", False
    out = bytearray()
    for i in range(0, len(data), 5):
        v = 0
        for c in data[i:i + 5]:
            k = _Z85.find(bytes([c]))
            if k < 0:
                return b"", False
            v = v * 85 + k
        if v >= 1 << 32:
            return b"", False
        out += v.to_bytes(4, "big")
    return bytes(out), True


@command("basenc", usage="basenc [OPTION]... [FILE]", help="basenc encode or decode FILE, or standard input, to standard output.")
@stdio
def basenc(ctx: CommandContext, argv: list[str]) -> int:
    return _basenc(ctx, argv, None)
