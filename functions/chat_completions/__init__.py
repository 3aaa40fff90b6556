"""The function serving ``POST /v1/chat/completions/derender``."""
