"""The composition: what spans several service packages, so that none of them has to
import another sideways or upwards.

    facade           `Memory(root)`: the composition root the entry points call
    initialize       `autopoiesis init`: the layout, the template, hooks, the first commit
    demo             the whole pipeline offline on bundled sessions
    commit           a knowledge commit with a model's summary as its message
    compile_message  the compiled context for a message (watchers, compiler, usage counts)
    usage            how often each knowledge file was put in a compiled context
    sync             sync with a remote (commit, fetch, merge, verify, push)
    forget           the one sanctioned history rewrite

The CLI, the MCP server, the daemon's jobs and scripts/ hold a `Memory` and call its
methods (the harness integrations still call the modules here); the services below this
layer (capture, index, topics, compiler, knowledge) never import it (an import-linter
contract checks).
"""

from autopoiesis.memory.facade import Memory

__all__ = ["Memory"]
