"""The kernel: one module per concept, each the one owner of it.

    paths        MemoryRepo: the layout of a memory repo, every state file under .autopoiesis/,
                 the template of a new one
    config       memory-config.yaml, validated, and every default
    frontmatter  split / load / dump of YAML frontmatter (python-frontmatter), strings stay strings
    text         words, stopwords, content words, token counting, one_line, slugs, cutting
    clock        UTC now, timestamp parse / format, absurd values refused
    sqlite       a SQLite connection that can load sqlite-vec, in WAL mode
    events       the one append-only JSONL event log
    redact       the one secret redaction
    streams      stdin / stdout / stderr as a process may have been started without them
    project      the project of a folder: its git repository (a worktree's or subfolder's
                 main one), named by its origin remote, read from .git without running git

Nothing here imports anything of autopoiesis but `autopoiesis.errors` and other kernel
modules (an import-linter contract keeps it so), and nothing here imports numpy,
scikit-learn, openai or GitPython: the git hooks import the kernel on every commit.
"""
