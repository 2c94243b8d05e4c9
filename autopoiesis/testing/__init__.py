"""Test support shipped with the package: `openai_server.OpenAIServer`, a real loopback
HTTP server speaking enough of the OpenAI API (chat completions, embeddings, models) to
test the LLM path end to end — retries, timeouts, JSON repair, budgets — without a
network. autopoiesis's own tests and benchmarks use it, and so can a plugin's (an
extractor's LLM flavour, an embedder): point `llm.base_url` at `server.base_url`.
`git_http.GitHTTPServer` serves bare repositories over git's smart HTTP on loopback, for
tests and benchmarks of sync between clones."""
