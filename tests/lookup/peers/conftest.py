"""Fixtures for the peers' tests: the compiled originals, and recording golden files."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import pytest

from peer_originals import Unavailable, build, load_golden, save_golden


def pytest_addoption(parser):
    parser.addoption("--record-peer-goldens", action="store_true",
                     help="rewrite tests/lookup/peers/golden/*.json from the peers' originals")


@pytest.fixture(scope="session")
def original_binary(request, tmp_path_factory) -> Callable[[str], Path]:
    """``original_binary("llama.cpp")``: the compiled harness, or a skip saying why it cannot run.
    Harnesses are kept in pytest's cache between runs (in a temp folder when it is off)."""
    cache = getattr(request.config, "cache", None)
    cache_dir = Path(cache.mkdir("peer-originals")) if cache else tmp_path_factory.mktemp("peer-originals")
    built: dict[str, Path | str] = {}

    def get(name: str) -> Path:
        if name not in built:
            try:
                built[name] = build(name, cache_dir)
            except Unavailable as exc:
                built[name] = str(exc)
        if isinstance(built[name], str):
            pytest.skip(built[name])
        return built[name]

    return get


@pytest.fixture
def golden(request):
    """``golden(peer, original_description, make_cases)``: the recorded cases of ``peer``; with
    ``--record-peer-goldens``, first rewritten from ``make_cases()`` (which runs the original)."""

    def get(peer: str, original: str, make_cases: Callable[[], list[dict]]) -> list[dict]:
        if request.config.getoption("--record-peer-goldens"):
            save_golden(peer, original, make_cases())
        return load_golden(peer)

    return get
