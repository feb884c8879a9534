"""Just enough DNS wire format for the sandbox's stub resolver: parse one question, build an answer."""

# Hand-written (not dnspython): the stub answers only A/AAAA questions for names the policy
# allows, from addresses the proxy side resolved and checked; everything else is REFUSED.
# Parsing one question and packing a few A/AAAA records is ~60 lines, and the runner side
# must not import anything heavy.

from __future__ import annotations

import ipaddress
import struct

__all__ = ["NOERROR", "NXDOMAIN", "REFUSED", "SERVFAIL", "TYPE_A", "TYPE_AAAA", "answer",
           "parse_query"]

TYPE_A, TYPE_AAAA = 1, 28
NOERROR, SERVFAIL, NXDOMAIN, REFUSED = 0, 2, 3, 5
_HDR = struct.Struct("!HHHHHH")


def parse_query(msg: bytes) -> tuple[int, int, str, int, bytes] | None:
    """(id, flags, name, qtype, question bytes) of a standard query, or None if malformed."""
    if len(msg) < _HDR.size:
        return None
    qid, flags, qd, _, _, _ = _HDR.unpack_from(msg)
    if flags & 0x8000 or qd != 1:
        return None
    pos, labels = _HDR.size, []
    while True:
        if pos >= len(msg):
            return None
        n = msg[pos]
        pos += 1
        if n == 0:
            break
        if n & 0xC0 or pos + n > len(msg):  # no compression in a question we accept
            return None
        labels.append(msg[pos:pos + n])
        pos += n
    if pos + 4 > len(msg):
        return None
    qtype, qclass = struct.unpack_from("!HH", msg, pos)
    if qclass != 1:
        return None
    try:
        name = b".".join(labels).decode("ascii")
    except UnicodeDecodeError:
        return None
    return qid, flags, name, qtype, msg[_HDR.size:pos + 4]


def answer(query: tuple[int, int, str, int, bytes], rcode: int,
           addrs: list[str] = (), ttl: int = 30) -> bytes:  # type: ignore[assignment]
    """A response to ``query`` with ``rcode`` and one record per address of the asked type."""
    qid, qflags, _, qtype, question = query
    want = 4 if qtype == TYPE_A else 6 if qtype == TYPE_AAAA else 0
    rrs = []
    for a in addrs:
        ip = ipaddress.ip_address(a)
        if ip.version == want:
            rrs.append(b"\xc0\x0c" + struct.pack("!HHIH", qtype, 1, ttl, len(ip.packed))
                       + ip.packed)
    flags = 0x8000 | (qflags & 0x0100) | 0x0080 | (rcode & 0xF)  # QR, RD copied, RA
    return _HDR.pack(qid, flags, 1, len(rrs), 0, 0) + question + b"".join(rrs)
