"""Our kernels' numba cache is keyed on every kernel module's source, not only the kernel's own."""

from __future__ import annotations

import importlib
from pathlib import Path

from lookup.kernel_cache import ROOT, kernel, sources_digest


def kernel_modules() -> list[str]:
    return sorted("lookup." + ".".join(p.relative_to(ROOT).with_suffix("").parts)
                  for p in ROOT.rglob("*.py") if b"@kernel" in p.read_bytes() and p.name != "kernel_cache.py")


def test_every_cached_kernel_is_stamped_with_every_kernel_modules_source():
    names = kernel_modules()
    assert "lookup.acceptance.chain_kernel" in names and "lookup.indexes.id_map" in names
    stamped = 0
    for name in names:
        module = importlib.import_module(name)
        for value in vars(module).values():
            if getattr(getattr(value, "py_func", None), "__module__", None) != name:
                continue  # not a kernel, or one imported from another module
            stamp = value._cache._cache_file._source_stamp
            assert isinstance(stamp, tuple) and stamp[1] == sources_digest(), f"{name}.{value.__name__}"
            stamped += 1
    assert stamped >= 30


def test_no_module_caches_a_kernel_around_the_decorator():
    for path in ROOT.rglob("*.py"):
        if path.name != "kernel_cache.py":
            assert "njit(cache=True" not in path.read_text(), path


def test_the_digest_follows_a_kernel_module_and_only_those(tmp_path: Path):
    (tmp_path / "a.py").write_text("@kernel\ndef f(x):\n    return x\n")
    (tmp_path / "plain.py").write_text("x = 1\n")
    before = sources_digest(tmp_path)
    (tmp_path / "plain.py").write_text("x = 2\n")
    assert sources_digest.__wrapped__(tmp_path) == before
    (tmp_path / "a.py").write_text("@kernel\ndef f(x):\n    return x + 1\n")
    assert sources_digest.__wrapped__(tmp_path) != before


def test_a_kernel_with_options_still_compiles_and_runs():
    @kernel(inline="always")
    def twice(x):
        return 2 * x

    @kernel
    def outer(x):
        return twice(x) + 1

    assert outer(3) == 7
