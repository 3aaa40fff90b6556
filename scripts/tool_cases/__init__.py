"""The tool-call formats scripts/record_tool_fixtures.py records: one module a format, each
with a ``FORMAT`` (its servers, how it encodes and prompts, its cases in recording order)."""
