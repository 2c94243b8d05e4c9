"""The rows a batch of files becomes in memory.db: a files row (its chunk texts packed
together), a chunks row, a chunks_fts row and a vector row a chunk, and the links rows of
its [[wikilinks]]. IndexStore.write_files prepares the batch and inserts these."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from autopoiesis.index import db
from autopoiesis.index.chunking import FileChunks, tags_json
from autopoiesis.index.projects import file_project


class BatchRows(NamedTuple):
    file_rows: list[tuple]
    link_rows: list[tuple[Any, ...]]
    chunk_rows: list[tuple]
    fts_rows: list[tuple[int, str]]
    vec_rows: list[tuple[int, bytes, str]]


def batch_rows(
    prepared: Sequence[tuple[str, str, os.stat_result, str, FileChunks]],
    text_of: Mapping[str, str],
    vectors: Sequence[bytes],
    next_id: int,
) -> BatchRows:
    """The rows of PREPARED ((path, category, stat, hash, chunked file) a file), its chunks
    numbered from NEXT_ID, their VECTORS in order."""
    from autopoiesis.index import links  # a write's: a search never loads it

    now = time.time()
    file_rows: list[tuple] = []
    chunk_rows: list[tuple] = []
    fts_rows: list[tuple[int, str]] = []
    vec_rows: list[tuple[int, bytes, str]] = []
    link_rows: list[tuple[Any, ...]] = []
    for path, category, st, digest, fc in prepared:
        link_rows += links.rows_of(path, category, text_of[path])
        project = file_project(path, category, text_of[path])
        packed, spans = db.pack_texts([c.text for c in fc.chunks])
        file_rows.append(
            (
                path,
                category,
                st.st_mtime,
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_size,
                digest,
                fc.token_count,
                fc.line_count,
                tags_json(fc.tags),
                fc.title,
                now,
                project,
                links.link_name(path),
                packed,
            )
        )
        for c, (start, length) in zip(fc.chunks, spans):
            chunk_rows.append(
                (
                    next_id,
                    path,
                    category,
                    c.kind,
                    c.start_line,
                    c.end_line,
                    c.turn_time,
                    c.heading,
                    start,
                    length,
                    c.content_hash,
                    c.body_hash,
                    c.own_start,
                    c.own_end,
                    int(c.user_turn),
                    project,
                )
            )
            fts_rows.append((next_id, c.text))
            vec_rows.append((next_id, vectors[len(vec_rows)], category))
            next_id += 1
    return BatchRows(file_rows, link_rows, chunk_rows, fts_rows, vec_rows)
