"""Secret redaction at capture: realistic secrets go, look-alikes stay."""

from __future__ import annotations

import pytest

from autopoiesis.core.redact import Redactor

SECRETS = {
    "openai_key": "sk-proj-Ab3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xYz2B4c6D8",
    "anthropic_key": "sk-ant-api03-" + "Xy9_" * 20 + "AA",
    "aws_access_key": "AKIAIOSFODNN7EXAMPLE",
    "github_token": "ghp_" + "a1B2c3D4e5F6" * 3,
    "slack_token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "bearer_token": "Authorization: Bearer eyJhbGciOi1234567890abcdefXYZ",
    "url_password": "postgres://admin:hunter2@db.internal:5432/app",
    "private_key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU=\n-----END OPENSSH PRIVATE KEY-----",
}
LOOKALIKES = [
    "commit 3f40072cb27e5c7f9a8b7c6d5e4f3a2b1c0d9e8f",
    "request id 123e4567-e89b-12d3-a456-426614174000",
    "we train it with sk-learn and the sk-learn-style API",
    "the task-sk-short was done",
    "see https://example.com/docs?page=2",
    "AKIA is a prefix, AKIAshort is not a key",
    "bearer of bad news",
]


@pytest.mark.parametrize("kind, secret", SECRETS.items())
def test_real_secrets_are_redacted_and_counted(kind: str, secret: str) -> None:
    r = Redactor()
    out = r.redact(f"here: {secret} end")
    assert f"[redacted:{kind}]" in out
    assert r.counts[kind] == 1
    # nothing of the secret itself survives (for a URL only user:password is secret)
    sensitive = "hunter2" if kind == "url_password" else secret[-8:]
    assert sensitive not in out


@pytest.mark.parametrize("text", LOOKALIKES)
def test_lookalikes_survive(text: str) -> None:
    r = Redactor()
    assert r.redact(text) == text
    assert not r.counts


def test_extra_patterns_from_config_and_disabling() -> None:
    r = Redactor(extra=[("employee_id", r"EMP-\d{6}")])
    assert r.redact("badge EMP-123456") == "badge [redacted:employee_id]"
    off = Redactor(enabled=False)
    assert off.redact(SECRETS["openai_key"]) == SECRETS["openai_key"]
