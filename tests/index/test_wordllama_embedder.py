"""The wordllama embedder (the `static` extra) against its real bundled model, real git
repos and real SQLite with sqlite-vec; and its clear error when the package is missing."""

from __future__ import annotations

import importlib.util
import sys
from array import array
from pathlib import Path

import pytest

from autopoiesis.core.paths import MemoryRepo
from autopoiesis.errors import EmbedderError
from autopoiesis.index import SearchIndex
from autopoiesis.index.embedders import Embedder, make_embedder
from autopoiesis.index.embedders.wordllama import WordLlamaEmbedder

needs_wordllama = pytest.mark.skipif(
    importlib.util.find_spec("wordllama") is None,
    reason="wordllama is not installed (pip install 'autopoiesis[static]')",
)

NOTES = {
    "knowledge/projects/shop/dev.md": (
        "# Dev setup\n\nTo work on the app, `npm run dev:all` uses concurrently to launch the "
        "Vite client and the Express API together.\n"
    ),
    "knowledge/projects/shop/deploy.md": (
        "# Deploys\n\nDatabase migrations go through alembic upgrade head before every deploy.\n"
    ),
    "knowledge/reference/garden.md": (
        "# Garden\n\nGardening calendar: tomatoes are planted in May, garlic in October.\n"
    ),
}


def cosine(a: bytes, b: bytes) -> float:
    return sum(x * y for x, y in zip(array("f", a), array("f", b)))


@needs_wordllama
def test_vectors_come_from_the_bundled_model_without_running_its_loader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the package's loader would look for (and download) files under HOME/.cache/wordllama
    monkeypatch.setenv("HOME", str(tmp_path))
    embedder = WordLlamaEmbedder()
    assert isinstance(embedder, Embedder)
    assert (embedder.dimensions, embedder.fingerprint) == (256, "wordllama:l2_supercat:256:128")
    assert not embedder.lexical and embedder.preferred_merge == "weighted"
    vecs = embedder.embed(["starting both dev servers at once", "", "café 中文 🎉"])
    assert [len(v) for v in vecs] == [256 * 4] * 3
    assert sum(x * x for x in array("f", vecs[0])) == pytest.approx(1.0, abs=1e-5)
    assert not vecs[1].strip(b"\x00")  # no token, no direction: a zero vector
    assert embedder.embed_query("starting both dev servers at once") == vecs[0]
    assert "wordllama" not in sys.modules
    assert not (tmp_path / ".cache").exists()
    # a paraphrase is nearer than an unrelated sentence on the same subject
    query = embedder.embed_query("starting both dev servers at once")
    near, far = embedder.embed(
        ["concurrently runs the client and the server dev scripts", "the database migration failed"]
    )
    assert cosine(query, near) > embedder.min_similarity > cosine(query, far)


@needs_wordllama
def test_search_finds_a_paraphrase_bm25_cannot(memory_repo: MemoryRepo, commit_all) -> None:
    for rel, text in NOTES.items():
        path = memory_repo.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    config = memory_repo.root / "memory-config.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace("  embedder: offline", "  embedder: wordllama"),
        encoding="utf-8",
    )
    commit_all(memory_repo, "notes")
    embedder = make_embedder(memory_repo.config.search.embedder, memory_repo.config)
    assert isinstance(embedder, WordLlamaEmbedder)
    with SearchIndex(memory_repo) as index:
        index.rebuild_full()
        assert index.store.meta("embedder") == "wordllama:l2_supercat:256:128"
        assert index.store.uses_vec0
        # no word of the question is in the note that answers it
        question = "how do I boot both development servers simultaneously?"
        lexical = index.search(question, limit=10, mode="bm25")
        assert "knowledge/projects/shop/dev.md" not in [r.path for r in lexical]
        hits = index.search(question, limit=3, explain=True)
        assert hits[0].path == "knowledge/projects/shop/dev.md"
        assert hits[0].explain is not None and hits[0].explain["merge"] == "weighted"
        assert index.search("when do we sow vegetables?", limit=3)[0].path == (
            "knowledge/reference/garden.md"
        )


def test_a_missing_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # what an absent package looks like
    with pytest.raises(EmbedderError, match=r"pip install 'autopoiesis\[static\]'"):
        WordLlamaEmbedder()
