"""autopoiesis inside a running agent harness: the hooks it calls and how they get there.

    integrate     writes (and removes) autopoiesis's entries in a harness's own settings:
                  Claude Code's settings.json hooks, Codex's `notify` in config.toml
    claude_code   what each Claude Code hook event does (compiled context, the
                  pre-compaction flush, the session's import)
    codex         what Codex's notify does (the rollout's import once the thread is idle)
    sessions      the harness sessions seen but not imported yet, and the detached import
    runner        the hook process: payload in, JSON out, never a failure the harness sees

It spans the compiler, the watchers, capture's importers and the lifecycle, so it lives
in the app layer. The hooks run on every prompt: nothing here is imported by the CLI at
start-up, and `python -m autopoiesis ... hook` skips the CLI framework altogether
(autopoiesis/__main__.py).
"""
