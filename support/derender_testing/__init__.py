"""Test support for derender, shared by ``tests/``, ``bench/`` and ``scripts/``.

Installed editable by ``make test``'s dev install (``pip install -e support``); a distribution of
its own so that it is never part of derender's wheel or Lambda layer. Its modules find the
repository from their own place (``models.ROOT``).
"""
