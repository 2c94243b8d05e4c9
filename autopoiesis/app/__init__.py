"""The application layer: what spans several packages, so that none of them has to
import another sideways or upwards.

    usage            how often each knowledge file was put in a compiled context
                     (the compiler's frequency boost, the pruner's evidence of use)

The CLI and the MCP server call this layer; the packages below it (capture, index,
watch, compiler, llm, lifecycle) never import it (an import-linter contract checks).
"""
