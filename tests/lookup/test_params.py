"""Constructor parameter checks."""

from __future__ import annotations

import numpy as np
import pytest

from lookup.params import require_bool


def test_require_bool_passes_bools():
    assert require_bool("tree", True) is True and require_bool("tree", False) is False
    assert require_bool("tree", np.bool_(True)) is True


@pytest.mark.parametrize("value", ["false", "yes", "", 0, 1, None, 1.0, [True]])
def test_require_bool_names_the_parameter(value):
    with pytest.raises(TypeError, match=r"^tree must be True or False, got "):
        require_bool("tree", value)
