"""Text and files from outside the code, made safe to show and bounded to read: :mod:`pldcore.untrusted`
(in the base package, so that the readers of cost profiles and fit files use it too), under the name
the benchmark and competition modules have always imported it by."""

from pldcore.untrusted import (LINE_CHARS, MAX_DEPTH, clean, clean_block, open_regular, parse_json,  # noqa: F401
                               read_bytes, read_json, too_deep)
