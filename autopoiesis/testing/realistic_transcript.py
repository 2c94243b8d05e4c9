"""A realistic transcript for timing redaction: prose, code, tool output, a shell session
and a diff, with a few secrets of the corpus (`secrets_corpus`) among them, at the keyword
and long-token density of real harness logs."""

from __future__ import annotations

import random

from autopoiesis.testing.secrets_corpus import CORPUS, fake

_HEX = "0123456789abcdef"

_PROSE = (
    "We looked at the deploy pipeline again (step {i}). The rollback plan needs a second "
    "reviewer, and the staging cluster should mirror production before the release on "
    "Thursday. I think the flaky test comes from the clock: it reads the wall time twice.\n"
)
_CODE = """```python
def load_config_{i}(path: Path, *, strict: bool = False) -> Config:
    \"\"\"Read the YAML config at PATH; unknown keys are refused when STRICT.\"\"\"
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {{}}
    budget = data.get("max_tokens", {i})
    for name, value in sorted(data.items()):
        if name not in KNOWN and strict:
            raise ConfigError(f"{{path}}: unknown key {{name!r}}")
    return Config(budget=budget, **data)
```
"""
_CODE_KEYWORDS = """```python
token_budget = data.get("max_tokens", {i})
api_key = os.environ.get("OPENAI_API_KEY")
client = Client(api_key=api_key, timeout={i})
```
"""
_TOOL = (
    '{{"tool": "exec", "cmd": "git log --oneline -3", "exit": 0, "stdout": '
    '"3f40072 fix the rollback\\n9e8d7c6 add the staging cluster\\n1c0d9e8 bump deps", '
    '"duration_ms": {i}, "tokens_in": 1234}}\n'
    '{{"id": "{uuid}", "sha": "{sha}"}}\n'
    "image@sha256:{sha}{sha:.24} pulled\n"
)
_SHELL = (
    "$ ls -la src/\ntotal 48\ndrwxr-xr-x  6 ana staff  192 Mar  1 09:12 .\n"
    "-rw-r--r--  1 ana staff {i} Mar  1 09:12 config.py\n"
    "$ pytest -q tests/test_config.py\n........................                [100%]\n"
    "24 passed in 0.{i}s\n"
)
_DIFF = (
    "diff --git a/src/config.py b/src/config.py\n--- a/src/config.py\n+++ b/src/config.py\n"
    "@@ -{i},7 +{i},8 @@ def load_config(path):\n-    return Config(**data)\n"
    "+    if strict:\n+        check_keys(data)\n+    return Config(**data)\n"
)


def realistic_transcript(
    size: int = 1_000_000, secrets_every: int = 40, dense: bool = False
) -> str:
    """About SIZE characters of what a long agent session holds: prose, code, tool output
    (JSON, shell, diffs, git SHAs, UUIDs, digests), a secret of the corpus every
    SECRETS_EVERY blocks; no two blocks alike. The mix has the density of keyword
    assignments (~300 lines per MB) and of assigned long tokens (~1,100 per MB) of the
    shared harness logs; DENSE puts a keyword assignment in every block of code
    (~3,000 per MB). The same text on every run."""
    blocks = (_PROSE, _CODE_KEYWORDS if dense else _CODE, _TOOL, _SHELL, _DIFF, _CODE_KEYWORDS)
    parts: list[str] = []
    total = i = 0
    rng = random.Random("realistic-transcript")
    while total < size:
        if i % secrets_every == secrets_every - 1:
            part = CORPUS[(i // secrets_every) % len(CORPUS)].text + "\n"
        else:
            template = blocks[i % len(blocks)]
            if template is _CODE_KEYWORDS and not dense and i % 12 != 5:
                template = _CODE
            uuid = "-".join(fake(f"u{i}{n}", n, _HEX) for n in (8, 4, 4, 4, 12))
            part = template.format(i=i, uuid=uuid, sha="".join(rng.choices(_HEX, k=40)))
        parts.append(part)
        total += len(part)
        i += 1
    return "".join(parts)
