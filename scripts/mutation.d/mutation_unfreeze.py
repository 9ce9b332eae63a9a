"""Loaded by scripts/mutation.d/safety.sh (-p mutation_unfreeze): empty the reader's caches for the safety module.

mutation.sh's plugin empties every lru_cache at a session's start by walking `gc.get_objects()`, but
that walk does not see frozen objects, and both mutmut's fork server and tests/conftest.py call
`gc.freeze()` before a mutant's tests run: `find_sensitive`'s cache kept the unmutated answers of
the stats run, and a credentials mutant survived without being run (issue 40). Unfrozen first, the
walk sees them. Only in the safety module's tree, so the other modules' runs are as they were.
"""

import functools
import gc
import os

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    if f"{os.sep}var{os.sep}mutation{os.sep}safety{os.sep}" not in os.getcwd() + os.sep:
        return
    gc.unfreeze()
    for obj in gc.get_objects():
        try:
            if isinstance(obj, functools._lru_cache_wrapper):
                obj.cache_clear()
        except ReferenceError:  # a weak proxy whose object is gone
            continue
