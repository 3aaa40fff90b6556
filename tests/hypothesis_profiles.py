"""Hypothesis profiles, loaded before any test module builds its ``settings``.

``make test`` (and CI) runs the ``ci`` profile: derandomized, so every run draws the same
examples and a property test cannot fail at random; no example database. ``make explore``
runs the ``explore`` profile (``HYPOTHESIS_PROFILE=explore``): random draws and ten times the
examples, for looking for new counterexamples; add what it finds as an explicit example.
"""

from __future__ import annotations

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True,
                          max_examples=settings.default.max_examples * 10)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)
