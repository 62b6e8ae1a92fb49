"""A drafter file works wherever a drafter name does: the one drafter it defines, or one clear error."""

from __future__ import annotations

import textwrap

import pytest

import lookup
from pldcore.errors import PLDError
from lookup.files import drafter_class_in

REPEAT = """
    from lookup import Draft, Drafter


    class Helper(Drafter):  # a helper base in the same file does not count
        def propose(self, budget):
            return Draft([])


    class Repeat(Helper):
        def __init__(self, max_tokens: int = 2):
            super().__init__()
            self.max_tokens = max_tokens

        def propose(self, budget):
            return Draft(self.context[-1:] * min(budget, self.max_tokens))
"""


def write(tmp_path, text: str, name: str = "mine.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_the_leaf_drafter_is_found_and_built_by_name_with_parameters(tmp_path):
    path = write(tmp_path, REPEAT)
    assert drafter_class_in(path).__name__ == "Repeat"
    drafter = lookup.create(str(path), max_tokens=3)
    drafter.reset([4, 7])
    assert drafter.propose(8).tokens.tolist() == [7, 7, 7]
    assert drafter.name == "mine" and lookup.get(str(path)).wants_top == 0


def test_an_edited_file_gives_the_new_class(tmp_path):
    path = write(tmp_path, REPEAT)
    before = lookup.create(str(path))
    path.write_text(textwrap.dedent(REPEAT).replace("max_tokens: int = 2", "max_tokens: int = 5"))
    after = lookup.create(str(path))
    assert (before.max_tokens, after.max_tokens) == (2, 5)
    assert drafter_class_in(path) is type(after)  # unchanged source: the same module, not a new one


@pytest.mark.parametrize("text,match", [
    ("x = 1\n", "defines no Drafter subclass"),
    ("from lookup.drafters.unfold import UnfoldDrafter\n", "defines no Drafter subclass"),  # imported, not defined
    (REPEAT + "\n    class Other(Helper):\n        pass\n", "defines 2 Drafter subclasses \\(Other, Repeat\\)"),
    ("def broken(:\n", "mine.py: line 1"),
    ("import no_such_module_here\n", "failed to import: ModuleNotFoundError"),
])
def test_a_bad_file_is_one_line_naming_it(tmp_path, text, match):
    path = write(tmp_path, text)
    with pytest.raises(PLDError, match=match) as exc:
        lookup.create(str(path))
    assert "\n" not in str(exc.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(PLDError, match="no drafter file"):
        lookup.get(str(tmp_path / "nope.py"))


def test_a_file_with_no_class_to_be_a_drafter_is_refused_from_its_source_alone():
    """The static half of the rule (nothing runs): a class statement with a base, or type(...) with
    three arguments, may define a drafter; anything else cannot."""
    import ast

    from lookup.files import check_could_define_a_drafter

    for source in ("class D(Drafter):\n    pass\n", "class D(metaclass=M):\n    pass\n",
                   "D = type('D', (Drafter,), {})\n", "def f():\n    class D(B):\n        pass\n"):
        check_could_define_a_drafter(ast.parse(source), "f.py")  # may: the sandbox's run decides
    for source in ("", "X = 1\n", "class D:\n    pass\n", "t = type(3)\n"):
        with pytest.raises(PLDError, match=r"^f\.py defines no Drafter subclass"):
            check_could_define_a_drafter(ast.parse(source), "f.py")
