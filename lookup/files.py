"""A drafter defined in a Python file: wherever a drafter name goes, a path to a ``.py`` file does.

    cls = drafter_class_in("my_drafter.py")        # the one Drafter subclass the file defines
    lookup.create("my_drafter.py", max_tokens=8)   # the registry resolves file paths through here

A file defines exactly one drafter: the Drafter subclasses defined in it (not imported into it)
that no other of them extends. A helper base class in the same file does not count. The same
file can be submitted to the competition unchanged.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import sys
import types
from pathlib import Path

from lookup.base import Drafter
from pldcore.errors import PLDError

SUFFIX = ".py"


def is_drafter_file(name: str) -> bool:
    """Whether a drafter name is a path to a Python file (it ends in ``.py``)."""
    return name.endswith(SUFFIX)


def file_drafter_name(path: str | Path) -> str:
    """The name a drafter file goes by when its class does not register one: the file's stem,
    with dashes for underscores (``my_drafter.py`` -> ``my-drafter``)."""
    return Path(path).stem.replace("_", "-")


def _leaves(module: types.ModuleType) -> list[type[Drafter]]:
    """The concrete Drafter subclasses ``module`` defines that no other of them extends."""
    found = [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, Drafter)
             and c.__module__ == module.__name__ and not inspect.isabstract(c)]
    return [c for c in found if not any(o is not c and issubclass(o, c) for o in found)]


def _no_drafter(where) -> PLDError:
    return PLDError(f"{where} defines no Drafter subclass (class X(lookup.Drafter) with a propose method)")


def check_could_define_a_drafter(tree: ast.Module, where) -> None:
    """Refuse, from the parsed source alone (nothing of it runs), a file that cannot define a
    drafter: it has no ``class`` statement with a base (a Drafter subclass names one) and builds
    no class with ``type(name, bases, namespace)``. Sound, not complete: a file that passes may
    still define none, which only running it tells (:func:`the_drafter`). ``leaderboard.py submit``
    asks this before it starts a sandbox, so the slip is one line at once, as in compare.py."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and (node.bases or node.keywords):
            return
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type" \
                and len(node.args) == 3:
            return
    raise _no_drafter(where)


def the_drafter(module: types.ModuleType, where: str) -> type[Drafter]:
    """The one drafter ``module`` defines; none or several raise PLDError naming ``where``."""
    leaves = _leaves(module)
    if not leaves:
        raise _no_drafter(where)
    if len(leaves) > 1:
        names = ", ".join(sorted(c.__name__ for c in leaves))
        raise PLDError(f"{where} defines {len(leaves)} Drafter subclasses ({names}); a drafter file defines exactly one")
    return leaves[0]


def compile_source(source: bytes | str, where: str | Path, filename: str | None = None, only_ast: bool = False):
    """A drafter file's ``source`` compiled as a module (nothing in it runs), or with ``only_ast``
    parsed only. A syntax error is a PLDError naming ``where`` (the file as its user knows it) and
    the line, the one message every way of loading a drafter file gives:
    ``my_drafter.py: line 4: expected ':'``. ``filename``: what tracebacks name (default ``where``)."""
    try:
        return compile(source, filename or str(where), "exec", ast.PyCF_ONLY_AST if only_ast else 0,
                       dont_inherit=True)
    except SyntaxError as exc:  # IndentationError too
        raise PLDError(f"{where}: " + (f"line {exc.lineno}: " if exc.lineno else "") + str(exc.msg)) from None
    except ValueError as exc:  # what a Python version may raise instead (null bytes in the source)
        raise PLDError(f"{where}: {exc}") from None


def drafter_class_in(path: str | Path) -> type[Drafter]:
    """Load the file at ``path`` as a module of its own and return the one drafter it defines.

    The module is named after the file's resolved path, so two files never share one, and
    loading a file again (after an edit, say) gives the class of its new source.
    """
    path = Path(path).expanduser()
    if not path.is_file():
        raise PLDError(f"no drafter file {path}")
    resolved = path.resolve()
    source = resolved.read_bytes()
    name = "pld_drafter_" + hashlib.sha256(str(resolved).encode() + b"\0" + source).hexdigest()[:12]
    module = sys.modules.get(name)
    if module is None:
        module = types.ModuleType(name)
        module.__file__ = str(resolved)
        code = compile_source(source, path, str(resolved))
        try:
            sys.modules[name] = module  # dataclasses and pickling look their module up
            exec(code, module.__dict__)
        except Exception as exc:  # noqa: BLE001 - the user's module failed while importing
            sys.modules.pop(name, None)
            raise PLDError(f"{path} failed to import: {type(exc).__name__}: {exc}") from None
    return the_drafter(module, path.name)
