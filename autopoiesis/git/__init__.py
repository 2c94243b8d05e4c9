"""Everything git, in one package.

    runner.py        the one subprocess runner (call, run, start), cat-file --batch, status and
                     diff parsing, uncommitted paths; standard library only
    locate.py        locate_repo: -C DIR, $AUTOPOIESIS_REPO or the git top level here
    repo.py          MemoryGit, composed of the four below (GitPython for porcelain)
    commits.py       its core: `run` with index.lock recovery, commits and their messages
    refs.py          tags and explore/* branches
    remote.py        fetch, ls-remote, push, merge; the forced push after a rewrite
    recall.py        log -S, learned, history, blame, a file at a tag or a date
    verify.py        transcript immutability over the whole history (`autopoiesis verify`)
    ref_updates.py   the reference-transaction hook's check of a ref update, before git makes it
    rewrite.py       `autopoiesis forget`'s git-filter-repo rewrite, and the record of each rewrite
    hooks.py         the git hooks' logic (pre-commit, post-commit, the history hooks) and
                     their installation; the light path: no GitPython, numpy or openai
    merge_driver.py  the knowledge merge driver git runs during a merge or pull

Kept empty on purpose: the git hooks import `autopoiesis.git.hooks` on every commit.
"""
