"""Each harness owns where its session logs are; the config's default is their union."""

from __future__ import annotations

import importlib
import pkgutil

import autopoiesis.integrations as integrations
from autopoiesis.core.config import Config


def test_the_default_session_globs_are_the_harnesses_own() -> None:
    owned: list[str] = []
    for info in pkgutil.iter_modules(integrations.__path__):
        if info.ispkg:
            owned += getattr(
                importlib.import_module(f"autopoiesis.integrations.{info.name}"),
                "SESSION_GLOBS",
                (),
            )
    assert owned, "no harness declares where its sessions are"
    assert sorted(Config().daemon.session_globs) == sorted(owned)
