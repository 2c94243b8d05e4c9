"""Plain-row vectors (index/plainvec.py) keep float32's cosines in half its bytes: the
packing is the same with and without numpy, the whole numbers give back the vector's
direction to 1e-5, the exact distances are the same both ways, and the coarse int8 half
is what sqlite-vec compares."""

from __future__ import annotations

import contextlib
import math
import subprocess
import sys
from collections.abc import Iterator
from unittest import mock

from hypothesis import example, given, settings
from hypothesis import strategies as st

from autopoiesis.core.sqlite import connect
from autopoiesis.index import plainvec
from autopoiesis.index.embedders.common import from_blob, to_blob

vectors = st.lists(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=16, max_size=16),
    min_size=1,
    max_size=40,
)


def cosine(a: list[float], b: list[float]) -> float:
    na, nb = math.sqrt(sum(x * x for x in a)), math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b)) / (na * nb)


@contextlib.contextmanager
def numpy_unloaded() -> Iterator[None]:
    """plainvec as a process that never loaded numpy runs it (it takes numpy only when
    numpy is in sys.modules, or for a batch of 32 and more)."""
    with mock.patch.dict(sys.modules):
        sys.modules.pop("numpy", None)
        yield
        assert "numpy" not in sys.modules


# a batch as a build packs it: past one slice of numpy's work (plainvec.PACK_SLICE)
batches = st.lists(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False, width=32), min_size=16, max_size=16),
    min_size=1,
    max_size=3 * plainvec.PACK_SLICE,
)


@settings(max_examples=40, deadline=None)
@given(batches)
@example([[float((i * 5 + k) % 9 - 4) * (i + 1) for k in range(16)] for i in range(150)])
def test_numpy_and_python_pack_the_same_bytes(rows: list[list[float]]) -> None:
    blobs = [to_blob(r) for r in rows]
    by_numpy = plainvec.pack(blobs)  # numpy is loaded in the test process
    with numpy_unloaded():
        alone = [plainvec.pack([b])[0] for b in blobs]
    assert alone == by_numpy


@settings(max_examples=60, deadline=None)
@given(vectors, st.lists(st.floats(-1, 1, allow_nan=False, width=32), min_size=16, max_size=16))
def test_distances_are_float32_cosines(rows: list[list[float]], query: list[float]) -> None:
    blobs = [to_blob(r) for r in rows]
    qvec = to_blob(query)
    if not any(from_blob(qvec)):
        return
    packed = [(i, b, n) for i, (b, n) in enumerate(plainvec.pack(blobs)) if n]
    got = dict(plainvec.distances(packed, qvec))
    for i, _, _ in packed:
        assert abs(got[i] - (1.0 - cosine(list(from_blob(blobs[i])), query))) < 1e-4
    with numpy_unloaded():  # the same without numpy (the one-shot search)
        alone = plainvec.distances(packed, qvec)
    for (i, d), (j, e) in zip(alone, plainvec.distances(packed, qvec)):
        assert abs(d - e) < 1e-12 and (i == j or abs(d - got[j]) < 1e-12)


def test_a_process_without_numpy_packs_and_ranks_as_this_one() -> None:
    """The one-shot search's process: numpy never loaded, the same bytes and distances."""
    rows = [[float((i * 7 + k * 3) % 11 - 5) for k in range(16)] for i in range(20)]
    blobs = [to_blob(r) for r in rows]
    qvec = to_blob([float(k % 5 - 2) for k in range(16)])
    packed = [(i, b, n) for i, (b, n) in enumerate(plainvec.pack(blobs)) if n]
    code = (
        "import sys; from autopoiesis.index import plainvec; "
        "blobs, rows, q = eval(sys.stdin.read()); "
        "out = ([plainvec.pack([b])[0] for b in blobs], plainvec.distances(rows, q)); "
        "assert 'numpy' not in sys.modules; print(repr(out))"
    )
    alone = subprocess.run(
        [sys.executable, "-c", code],
        input=repr((blobs, packed, qvec)),
        capture_output=True,
        text=True,
        check=True,
    )
    packs, dists = eval(alone.stdout)
    assert packs == plainvec.pack(blobs)
    here = plainvec.distances(packed, qvec)
    assert [i for i, _ in dists] == [i for i, _ in here]
    assert all(abs(d - e) < 1e-12 for (_, d), (_, e) in zip(dists, here))


def test_sqlite_vec_reads_the_top_half(tmp_path) -> None:
    conn, info = connect(tmp_path / "v.db")
    assert info.sqlite_vec_loaded
    ((blob, _),) = plainvec.pack([to_blob([3, -1, 0.5, 2])])
    assert len(blob) == 8
    (coarse,) = conn.execute(
        f"SELECT {plainvec.COARSE.replace('embedding', '?')}",
        (blob, 4, plainvec.coarse(to_blob([1, 1, -0.25, 2]))),
    ).fetchone()
    exact = 1.0 - cosine([3, -1, 0.5, 2], [1, 1, -0.25, 2])
    assert abs(coarse - exact) < 0.01
