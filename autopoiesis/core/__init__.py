"""The kernel: one module per concept, each the one owner of it.

    paths        MemoryRepo: the layout of a memory repo and every state file under .autopoiesis/
    frontmatter  split / load / dump of YAML frontmatter (python-frontmatter), strings stay strings
    text         words, stopwords, content words, token counting, one_line, slugs, cutting
    clock        UTC now, timestamp parse / format, absurd values refused
    git          git plumbing: run, cat-file --batch, status parsing, uncommitted paths
    sqlite       a SQLite connection that can load sqlite-vec, in WAL mode
    events       the one append-only JSONL event log
    redact       the one secret redaction

Nothing here imports anything of autopoiesis but `autopoiesis.errors` and other kernel
modules (an import-linter contract keeps it so), and nothing here imports numpy,
scikit-learn, openai or GitPython: the git hooks import the kernel on every commit.
"""
