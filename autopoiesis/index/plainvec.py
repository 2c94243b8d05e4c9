"""The plain-row vectors of memory.db (chunks_vecplain: a lexical embedder's, or any
embedder's without sqlite-vec), kept in half the bytes of float32 without changing a
ranking.

A vector is scaled so its largest component is 32,512 and rounded to whole numbers `w`
(16 bits, a relative precision of 3e-5: float32's cosines to about 1e-5, where the
candidates of a query differ by 1e-3 and more). It is stored as two int8 halves, `hi`
(the top byte: w + 128 divided by 256, rounded down) then `lo` (w - 256 hi), beside the
length of `w`:

* search re-scores BM25's candidates (`distances`) with the exact cosine of `w`, from
  the query's non-zero components only (a query has a few dozen of its 512): no numpy
  in a one-shot process, numpy where it is loaded;
* the full KNN, a lexical embedder's fallback, lets sqlite-vec scan the `hi` halves alone
  (an int8 vector: `COARSE`), and re-scores the OVERFETCH times K nearest exactly.

Storing the vectors as int8 alone (a quarter of float32) moved LoCoMo's turn hit@10 from
0.882 to 0.880: two rounding errors of 1/254 of the largest component swap near ranks.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Sequence
from typing import Any

from autopoiesis.index.embedders.common import from_blob

TOP = 32512  # 127 * 256: the largest |w|, so that hi stays within -127..127
PACK_SLICE = 64  # vectors pack() converts with numpy at once
OVERFETCH = 4  # the KNN re-scores this many times K of the coarse scan's nearest
# sqlite-vec's cosine distance of a row's hi half to a coarse query (coarse(); the
# dimensions are the second parameter)
COARSE = "vec_distance_cosine(vec_slice(vec_int8(embedding), 0, ?), vec_int8(?))"


def pack(blobs: Sequence[bytes]) -> list[tuple[bytes, float]]:
    """(the stored bytes, the length of w) of each float32 vector blob; the same bits with
    numpy (a batch, or once it is loaded) as without."""
    if not blobs:
        return []
    out: list[tuple[bytes, float]] = []
    if len(blobs) >= 32 or "numpy" in sys.modules:
        import numpy as np

        # a slice at a time: a build packs thousands, and the float64 and integer copies
        # of a whole batch were most of a 10,000-note build's Python memory (8 MiB)
        for i in range(0, len(blobs), PACK_SLICE):
            part = blobs[i : i + PACK_SLICE]
            wide = np.frombuffer(b"".join(part), dtype=np.float32).reshape(len(part), -1)
            wide = wide.astype(np.float64)
            top = np.abs(wide).max(axis=1)
            scale = TOP / np.where(top > 0, top, 1.0)
            w = np.rint(wide * scale[:, None]).astype(np.int32)  # |w| <= TOP
            hi = np.floor_divide(w + 128, 256)
            both = np.concatenate([hi, w - 256 * hi], axis=1).astype(np.int8)
            norms = np.sqrt(np.square(w, dtype=np.float64).sum(axis=1))
            out.extend((row.tobytes(), float(n)) for row, n in zip(both, norms))
        return out
    for blob in blobs:
        values = from_blob(blob)
        largest = max((abs(v) for v in values), default=0.0)
        factor = TOP / largest if largest > 0 else 1.0
        ws = [round(v * factor) for v in values]
        his = [(x + 128) // 256 for x in ws]
        halves = array("b", his + [x - 256 * h for x, h in zip(ws, his)])
        out.append((halves.tobytes(), math.sqrt(sum(x * x for x in ws))))
    return out


def coarse(qvec: bytes) -> bytes:
    """The query as an int8 vector for the COARSE scan (its largest component 127)."""
    values = from_blob(qvec)
    largest = max((abs(v) for v in values), default=0.0)
    factor = 127.0 / largest if largest > 0 else 1.0
    return array("b", [round(v * factor) for v in values]).tobytes()


def distances(rows: Sequence[tuple[int, bytes, float]], qvec: bytes) -> list[tuple[int, float]]:
    """The exact cosine distance of each (id, stored bytes, length) to the float32 query
    QVEC, nearest first (ties by id)."""
    q = from_blob(qvec)
    q_norm = math.sqrt(sum(v * v for v in q))
    if not rows or not q_norm:
        return []
    if "numpy" in sys.modules:
        out = _distances_numpy(rows, q, q_norm)
    else:
        dims = len(q)
        nonzero = [(i, v) for i, v in enumerate(q) if v]
        out = []
        for cid, blob, norm in rows:
            halves = memoryview(blob).cast("b")
            dot = sum(v * (256 * halves[i] + halves[dims + i]) for i, v in nonzero)
            out.append((int(cid), 1.0 - dot / (q_norm * norm) if norm else 1.0))
    out.sort(key=lambda x: (x[1], x[0]))
    return out


def _distances_numpy(
    rows: Sequence[tuple[int, bytes, float]], q: array, q_norm: float
) -> list[tuple[int, float]]:
    import numpy as np

    dims = len(q)
    query = np.asarray(q, dtype=np.float64)
    # Only the query's non-zero components count (a few dozen of 512): the dot product
    # reads those columns of the halves, not all of them (a third of the time at 300 rows).
    nonzero = np.flatnonzero(query)
    halves: Any = np.frombuffer(b"".join([r[1] for r in rows]), dtype=np.int8)
    part = halves.reshape(len(rows), 2, dims)[:, :, nonzero].astype(np.float64)
    dots = (256.0 * part[:, 0, :] + part[:, 1, :]) @ query[nonzero]
    norms = np.fromiter((r[2] for r in rows), dtype=np.float64, count=len(rows))
    dist = 1.0 - dots / (q_norm * np.where(norms > 0, norms, 1.0))
    dist[norms == 0] = 1.0
    return list(zip([int(r[0]) for r in rows], dist.tolist()))
