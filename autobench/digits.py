"""ASCII digits: the only digits a port, a run id, a job id or a Content-Length is written in.

A leaf module (standard library only).  ``str.isdigit()`` is also true for ``'²'`` and ``'８'``:
``int('²')`` then raises (a traceback from a recipe's port or a server's header), and
``int('８０００')`` is 8000, a number docker, HTTP and SQL never see written that way.  Every
"is this a number?" test on text from a user, a file or a server goes through here.
"""

from __future__ import annotations

import re

_DIGITS = re.compile(r"[0-9]+")


def is_digits(text: str) -> bool:
    """True when ``text`` is one or more ASCII digits and nothing else."""
    return _DIGITS.fullmatch(text) is not None
