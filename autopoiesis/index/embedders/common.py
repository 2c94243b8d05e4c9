"""What the embedders share: vectors as they travel (unit-length float32 bytes, what
sqlite-vec stores, so no caller needs numpy) and the no-download rule of local models."""

from __future__ import annotations

import math
import os
from array import array
from collections.abc import Iterable


def to_blob(values: Iterable[float]) -> bytes:
    """Unit-normalised float32 bytes of a sequence of numbers (a zero vector stays zero)."""
    vals = [float(v) for v in values]
    norm = math.sqrt(sum(v * v for v in vals))
    if norm > 0:
        vals = [v / norm for v in vals]
    return array("f", vals).tobytes()


def from_blob(blob: bytes) -> array:
    """The float32 values of a vector blob."""
    out = array("f")
    out.frombytes(blob)
    return out


def offline_hub() -> None:
    """Never download at run time: a local model must already be on disk."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
