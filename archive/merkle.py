"""A Merkle tree in the manner of RFC 9162 (Certificate Transparency 2.0), section 2.1.

Leaves hash as ``SHA-256(0x00 || data)``, interior nodes as ``SHA-256(0x01 || left || right)``; the
tree over ``n`` leaves splits at the largest power of two below ``n``. :class:`Frontier` keeps the
roots of the perfect subtrees of an append-only tree, so appending is O(log n) and the root is always
at hand. :func:`inclusion_proof` / :func:`verify_inclusion` and :func:`consistency_proof` /
:func:`verify_consistency` are the RFC's audit paths and their checks (2.1.3, 2.1.4).
"""

from __future__ import annotations

import hashlib
from typing import Sequence

EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    return hashlib.sha256(b"\x01" + left + right).digest()


def _split(n: int) -> int:
    """The largest power of two smaller than ``n`` (n >= 2)."""
    k = 1
    while k << 1 < n:
        k <<= 1
    return k


def root(leaves: Sequence[bytes]) -> bytes:
    """Merkle Tree Hash of a list of leaf hashes."""
    n = len(leaves)
    if n == 0:
        return EMPTY_ROOT
    if n == 1:
        return leaves[0]
    k = _split(n)
    return node_hash(root(leaves[:k]), root(leaves[k:]))


class Frontier:
    """Roots of the perfect subtrees of an append-only tree, largest first: ``sizes[i]`` leaves each."""

    def __init__(self, size: int = 0, hashes: list[bytes] | None = None):
        self.size = size
        self.hashes = list(hashes or [])

    def append(self, leaf: bytes) -> None:
        h, n = leaf, self.size
        while n & 1:  # merge equal-sized subtrees, as binary carries
            h = node_hash(self.hashes.pop(), h)
            n >>= 1
        self.hashes.append(h)
        self.size += 1

    def root(self) -> bytes:
        if not self.hashes:
            return EMPTY_ROOT
        h = self.hashes[-1]
        for left in reversed(self.hashes[:-1]):
            h = node_hash(left, h)
        return h


def range_root(leaves: Sequence[bytes], lo: int, hi: int, memo: dict | None = None) -> bytes:
    """Merkle Tree Hash of ``leaves[lo:hi]``. ``memo`` keeps the roots of perfect subtrees (whose
    leaves never change in an append-only log), so proofs after the first cost O(log n)."""
    n = hi - lo
    if n == 0:
        return EMPTY_ROOT
    if n == 1:
        return leaves[lo]
    perfect = n & (n - 1) == 0
    if perfect and memo is not None:
        hit = memo.get((lo, n))
        if hit is not None:
            return hit
    k = _split(n)
    h = node_hash(range_root(leaves, lo, lo + k, memo), range_root(leaves, lo + k, hi, memo))
    if perfect and memo is not None:
        memo[(lo, n)] = h
    return h


def inclusion_proof(leaves: Sequence[bytes], index: int, memo: dict | None = None) -> list[bytes]:
    """The audit path of leaf ``index`` in the tree over ``leaves`` (RFC 9162 2.1.3.1)."""
    n = len(leaves)
    if not 0 <= index < n:
        raise ValueError(f"leaf {index} is not in a tree of {n}")
    path: list[bytes] = []
    lo, hi = 0, n
    while hi - lo > 1:
        k = _split(hi - lo)
        if index < lo + k:
            path.append(range_root(leaves, lo + k, hi, memo))
            hi = lo + k
        else:
            path.append(range_root(leaves, lo, lo + k, memo))
            lo = lo + k
    return path[::-1]


def verify_inclusion(leaf: bytes, index: int, size: int, path: Sequence[bytes], expected_root: bytes) -> bool:
    """RFC 9162 2.1.3.2: does ``path`` prove leaf ``index`` of a tree of ``size`` with ``expected_root``?"""
    if not 0 <= index < size:
        return False
    fn, sn = index, size - 1
    r = leaf
    for p in path:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            r = node_hash(r, p)
        fn >>= 1
        sn >>= 1
    return sn == 0 and r == expected_root


def consistency_proof(leaves: Sequence[bytes], first: int) -> list[bytes]:
    """Proof that the tree of the first ``first`` leaves is a prefix of the tree over ``leaves``
    (RFC 9162 2.1.4.1)."""
    n = len(leaves)
    if not 0 < first <= n:
        raise ValueError(f"no consistency proof from size {first} to {n}")
    return _subproof(first, leaves, True)


def _subproof(m: int, leaves: Sequence[bytes], whole: bool) -> list[bytes]:
    n = len(leaves)
    if m == n:
        return [] if whole else [root(leaves)]
    k = _split(n)
    if m <= k:
        return _subproof(m, leaves[:k], whole) + [root(leaves[k:])]
    return _subproof(m - k, leaves[k:], False) + [root(leaves[:k])]


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes,
                       proof: Sequence[bytes]) -> bool:
    """RFC 9162 2.1.4.2: is the tree of size ``first`` with ``first_root`` a prefix of the tree of size
    ``second`` with ``second_root``?"""
    if first == second:
        return not proof and first_root == second_root
    if not 0 < first < second or not proof:
        return False
    path = list(proof)
    if first & (first - 1) == 0:  # a power of two: the first tree is a subtree of the second
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr = node_hash(c, fr)
            sr = node_hash(c, sr)
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            sr = node_hash(sr, c)
        fn >>= 1
        sn >>= 1
    return sn == 0 and fr == first_root and sr == second_root
