"""The function serving ``POST /v1/completions/derender``."""
