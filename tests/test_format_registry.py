"""The format records (``core/parsers/registry.py``): one record per reasoning and tool-call
format, checked at import, read by the policy code, loading only the machines that are used.

- Stream states issued before the records existed still verify and decode: the payloads of
  ``tests/fixtures/state-compat.json`` were encoded by the code of commit 609459c
  (``scripts/make_state_compat.py``), one per tool-call format, the reasoning machine and
  Harmony; each decodes to the fields recorded then and encodes back to the same bytes, and the
  marker table (whose indices are the stand-ins inside held text) is the one of then.
- The import-time checks refuse a clash and name both formats.
- Every record's references load the object it names.
- A process serving one model imports that model's format modules and no other.
- ``docs/formats.md``'s served table lists exactly the registry's parser names, each under its
  kind; every served name is one vLLM 0.33 registers (``tests/fixtures/vllm-0.33-parsers.json``),
  every other vLLM name is in its not-served table, and the counts it and the README give are
  the registry's.
- The policy code compares no format name: every name lives in the records.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from derender.core import parsers
from derender.core.parsers import reasoning, registry
from derender.core.parsers.registry import (
    MARKUP,
    REASONING_BY_NAME,
    REASONING_RECORDS,
    TOOL_RECORDS,
    TOOLS_BY_NAME,
    Machine,
    Marker,
    ReasoningRecord,
    Ref,
    ToolRecord,
)
from derender.core.state.stream import FINGERPRINT_BYTES, decode_state, encode_state

ROOT = Path(__file__).resolve().parent.parent
COMPAT = json.loads((ROOT / "tests/fixtures/state-compat.json").read_text(encoding="utf-8"))


def test_the_marker_table_is_the_one_states_were_issued_with() -> None:
    """Markers added since are appended: the indices states were issued with never change."""
    assert list(MARKUP[:34]) == COMPAT["markup"]
    assert MARKUP[34:43] == ("<tool_calls>", "</tool_calls>", "<tool_sep>",  # issue 19: Hy3
                             "<|action_start|>", "<|plugin|>", "<|action_end|>",  # InternLM2
                             "<|message_sep|>", "<|role_sep|>", "<|function_call|>")  # GigaChat 3
    # glm2: Tencent Hy4's suffixed markers
    assert MARKUP[43:53] == tuple(f"<{tag}:opensource>" for tag in (
        "think", "/think", "tool_calls", "/tool_calls", "tool_call", "/tool_call", "arg_key",
        "/arg_key", "arg_value", "/arg_value"))
    assert MARKUP[53:56] == ("<|open|>", "<|close|>", "<|sep|>")  # issue 20: Kimi K3 (kimi3)
    assert MARKUP[56:60] == ("<|start|>", "<|message|>", "<|eom|>", "<|eot|>")  # muse branch
    assert MARKUP[60:62] == ("<response>", "</response>")  # ERNIE 4.5 (wrapped2)
    assert MARKUP[62:67] == ("<｜tool_calls_begin｜>", "<｜tool_calls_end｜>",  # Step 3 tools
                             "<｜tool_call_begin｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>")
    assert MARKUP[67:69] == ("<|tools_prefix|>", "<|tools_suffix|>")  # Apertus
    assert MARKUP[69:85] == tuple(f"<{end}ifm|{tag}>" for tag in (  # K2 Horizon
        "think", "think_fast", "think_faster") for end in ("", "/")) + tuple(
        f"<{end}ifm|{tag}>" for tag in ("tool_calls", "tool_call", "arg_key", "arg_type",
                                         "arg_value") for end in ("", "/"))
    assert MARKUP[85:93] == ("<|message_model|>", "<|content_text|>", "<|content_thinking|>",
                             "<|content_invoke_tool_json|>", "<|content_invoke_tool_text|>",
                             "<|content_tool_error|>", "<|content_model_end_sampling|>",
                             "<|end_message|>")  # Inkling
    assert MARKUP[93:101] == ("<|START_THINKING|>", "<|END_THINKING|>", "<|START_RESPONSE|>",
                              "<|END_RESPONSE|>", "<|START_ACTION|>", "<|END_ACTION|>",
                              "<|START_TEXT|>", "<|END_TEXT|>")  # Cohere Command 3 and 4
    assert MARKUP[101:] == ("<dots_function_call>", "</dots_function_call>")  # dots



def widened(payload: str) -> bytes:
    """A payload issued before the binding fingerprint grew from 64 to 128 bits (the README's
    upgrade note: such a token gets 400 for at most one TTL), with its fingerprint widened:
    everything after it is laid out as then, and this test checks that it still is."""
    return bytes(FINGERPRINT_BYTES - 8) + bytes.fromhex(payload)

ADDED_FIELDS: dict[str, Any] = {"spill": False}
"""State fields added after the recorded states were issued, and the value they read as."""


@pytest.mark.parametrize("entry", COMPAT["states"], ids=lambda e: f"{e['kind']}-{e['name']}")
def test_a_state_issued_before_the_records_decodes_the_same(entry: dict[str, Any]) -> None:
    payload = widened(entry["payload"])
    state = decode_state(payload)
    assert encode_state(state) == payload
    parser = state.parser
    assert parser is not None
    if entry["kind"] == "harmony":
        assert parser.tools is None and parser.tool_tag is None
        assert repr(parser.harmony) == entry["harmony"]
        return
    assert parser.tool_tag == entry["tag"]
    fields = dataclasses.asdict(parser.tools)  # type: ignore[call-overload]
    # a field added later (kimi_k2's spilled argument whitespace) reads back at its default
    for key in fields.keys() - entry["tools"].keys():
        assert key in ADDED_FIELDS and fields.pop(key) == ADDED_FIELDS[key], key
    # a mode the machinery later named (an IntEnum over the same encoded numbers) is
    # compared by its name, as the earlier code spelled it
    assert fields.keys() == entry["tools"].keys()
    for key, value in fields.items():
        old = entry["tools"][key]
        now = value.name.lower() if isinstance(value, enum.Enum) and isinstance(old, str) \
            else value
        assert now == old, (key, now, old)
    if entry["kind"] == "tools":
        assert parsers.tag_of(entry["name"]) == entry["tag"]
        name = registry.TOOLS_BY_TAG[entry["tag"]].name
        assert isinstance(parser.tools, parsers.tool_format(name).state_type)
    else:
        assert parser.reasoning is not None
        now = dataclasses.asdict(parser.reasoning)
        # a field added since (granite-inkling: ``spoke``) reads back as its default
        added = {key: now.pop(key) for key in set(now) - set(entry["reasoning"])}
        assert added == {key: getattr(reasoning.ReasoningState(False), key) for key in added}
        assert now == entry["reasoning"]
        assert parser.reasoning.held.translate(parsers.RESTORE_MARKUP) == entry["held"]


def test_held_text_keeps_its_stand_ins() -> None:
    """The states pin stand-ins inside held text: ｜DSML｜ (16) and MiniMax M3's namespace
    (31) read back as those markers."""
    found = {}
    for entry in COMPAT["states"]:
        if entry["kind"] == "tools" and entry["name"] in ("deepseek_v41", "minimax_m3"):
            tools = decode_state(widened(entry["payload"])).parser.tools  # type: ignore[union-attr]
            found[entry["name"]] = (tools.held + tools.acc).translate(  # type: ignore[union-attr]
                parsers.RESTORE_MARKUP)
    assert "｜DSML｜" in found["deepseek_v41"] and "\ue010" not in found["deepseek_v41"]
    assert "]<]minimax[>[" in found["minimax_m3"]


# --------------------------------------------------------------------------- import-time checks


def _tool(name: str, tag: int, *markers: Marker, aliases: tuple[str, ...] = ()) -> ToolRecord:
    return ToolRecord(name, tag, Machine.OWN, Ref("m", "A"), aliases=aliases,
                      markers=markers)


def test_a_shared_tag_is_refused_naming_both_formats() -> None:
    with pytest.raises(RuntimeError, match="'one' and 'two' share the state tag 7"):
        registry._by_tag([_tool("one", 7), _tool("two", 7)])


def test_a_shared_name_is_refused_naming_both_formats() -> None:
    with pytest.raises(RuntimeError, match=r"'x' is both 'one'.s and 'two'.s"):
        registry._by_name([_tool("one", 1, aliases=("x",)), _tool("two", 2, aliases=("x",))],
                          "tool")


def test_marker_indices_are_checked_naming_both_formats() -> None:
    with pytest.raises(RuntimeError, match="index 0 is '<a>' for 'one' and '<b>' for 'two'"):
        registry._markup([_tool("one", 1, Marker(0, "<a>")), _tool("two", 2, Marker(0, "<b>"))])
    with pytest.raises(RuntimeError, match="'<a>' has index 0 for 'one' and 1 for 'two'"):
        registry._markup([_tool("one", 1, Marker(0, "<a>")),
                          _tool("two", 2, Marker(1, "<a>"), Marker(0, "<a>"))])
    with pytest.raises(RuntimeError, match=r"indices \[1\] are not declared"):
        registry._markup([_tool("one", 1, Marker(0, "<a>"), Marker(2, "<c>"))])
    shared = registry._markup([_tool("one", 1, Marker(0, "<a>")),
                               _tool("two", 2, Marker(0, "<a>"), Marker(1, "<b>"))])
    assert shared == ("<a>", "<b>")


# --------------------------------------------------------------------------- what records name


def test_every_reference_loads_what_it_names() -> None:
    for tool in TOOL_RECORDS:
        if tool.machine is Machine.HARMONY:
            assert tool.format is None and tool.tag is None
            continue
        assert parsers.tool_format(tool.name).name == tool.name
        for alias in tool.aliases:
            assert parsers.tool_format(alias) is parsers.tool_format(tool.name)
        assert (tool.config is not None) == (tool.machine is Machine.ENGINE)
        if tool.config is not None:
            assert parsers.engine_config(tool.name).name == tool.name
        for ref in (tool.call_id, tool.older_grammar):
            assert ref is None or callable(ref.load())
    for own in REASONING_RECORDS:
        if own.machine is Machine.OWN:
            assert parsers.reasoning_format(own.name).name == own.name
        if own.machine is Machine.ENGINE:
            config = parsers.engine_config(own.reasoning_config)
            assert config.think_transitions or config.start_phase is not None  # reads reasoning
            assert TOOLS_BY_NAME[own.reasoning_config].family == own.family
        if own.machine is Machine.FAMILY:  # its family's tool machine reads the reasoning
            assert parsers.tool_format(own.reasoning_config).feed_reasoning is not None
            assert TOOLS_BY_NAME[own.reasoning_config].family == own.family
        if own.switch is not None:
            assert callable(own.switch.load())


SERVE = """
import json, sys, tempfile, pathlib
from derender.core.registry import ModelRegistry
folder = pathlib.Path(tempfile.mkdtemp()) / "m"
folder.mkdir()
(folder / "tokenizer.json").write_text("{}")
if sys.argv[1] == "openai_gptoss":
    (folder / "config.json").write_text(json.dumps({"model_type": "gpt_oss"}))
(folder / "derender.json").write_text(json.dumps(
    {"reasoning_parser": sys.argv[1] or None, "tool_parser": sys.argv[2] or None}))
ModelRegistry(folder.parent)
print(json.dumps(sorted(m for m in sys.modules if m.startswith("derender.core.parsers"))))
"""


@pytest.mark.parametrize(("reasoning", "tool", "formats"), [
    ("", "", []),
    ("qwen3", "hermes", ["hermes"]),
    ("glm47", "glm47", ["glm"]),
    ("deepseek_v3", "deepseek_v32", ["dsml"]),
    ("", "qwen3_xml", ["qwen3_coder"]),
    ("openai_gptoss", "openai", ["harmony"]),
])
def test_only_the_served_formats_are_imported(reasoning: str, tool: str,
                                              formats: list[str]) -> None:
    done = subprocess.run([sys.executable, "-c", SERVE, reasoning, tool], capture_output=True,
                          text=True, check=True, env={"PYTHONPATH": str(ROOT / "src")})
    modules = json.loads(done.stdout)
    imported = sorted(m.rsplit(".", 1)[1] for m in modules
                      if m.startswith("derender.core.parsers.formats."))
    engine = "derender.core.parsers.engine" in modules
    # value typing is parsers/schema.py, not a format module: only the served ones
    assert imported == sorted(formats)
    assert engine == (tool in ("glm47", "deepseek_v32"))


# --------------------------------------------------------------------------- docs/formats.md

FORMATS_DOC = ROOT / "docs" / "formats.md"
VLLM = json.loads((ROOT / "tests/fixtures/vllm-0.33-parsers.json").read_text(encoding="utf-8"))
NAME = r"`([a-z0-9_-]+)`"


def _rows(section: str) -> list[list[str]]:
    text = FORMATS_DOC.read_text(encoding="utf-8")
    body = text.split(f"## {section}\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in body.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", row)[1:-1]] for row in rows[1:]]


def _served() -> tuple[set[str], set[str]]:
    reasoning_names: set[str] = set()
    tool_names: set[str] = set()
    for row in _rows("Served"):
        names = set(re.findall(NAME, row[1]))
        kind = row[2]
        if "(reasoning)" in row[1] or "(tools)" in row[1]:  # gpt-oss: one of each
            reasoning_names |= set(re.findall(NAME + r" \(reasoning\)", row[1]))
            tool_names |= set(re.findall(NAME + r" \(tools\)", row[1]))
            continue
        if kind.startswith(("reasoning", "both")):
            reasoning_names |= names
        if kind.startswith(("tools", "both")):
            tool_names |= names
    return reasoning_names, tool_names


def test_the_format_table_lists_the_registry() -> None:
    reasoning_names, tool_names = _served()
    assert reasoning_names == set(REASONING_BY_NAME)
    assert tool_names == set(TOOLS_BY_NAME)


def test_every_served_name_is_vllms_and_every_other_is_listed_as_not_served() -> None:
    assert len(VLLM["tool"]) == 58 and len(VLLM["reasoning"]) == 42
    assert set(TOOLS_BY_NAME) <= set(VLLM["tool"])
    assert set(REASONING_BY_NAME) <= set(VLLM["reasoning"])
    listed: dict[str, set[str]] = {"tools": set(), "reasoning": set()}
    for row in _rows("Not served yet"):
        (name,) = re.findall(NAME, row[0])
        listed[row[1]].add(name)
    assert listed["tools"] == set(VLLM["tool"]) - set(TOOLS_BY_NAME)
    assert listed["reasoning"] == set(VLLM["reasoning"]) - set(REASONING_BY_NAME)


def test_the_counts_said_are_the_registrys() -> None:
    tools, reasoning = len(TOOLS_BY_NAME), len(REASONING_BY_NAME)
    doc = " ".join(FORMATS_DOC.read_text(encoding="utf-8").split())
    assert (f"derender serves {tools} of the tool-call names and {reasoning} of the reasoning "
            "names") in doc
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert (f"derender serves {tools} of vLLM 0.33's 58 tool-call parser names and {reasoning} "
            "of its 42 reasoning parser names") in readme


# --------------------------------------------------------------------------- no names in policy

POLICY = ("core/parsers/__init__.py", "core/registry.py", "core/chat.py", "core/streaming.py",
          "core/state/stream.py", "core/parsers/engine.py")


def test_the_policy_code_compares_no_format_name() -> None:
    names = {*TOOLS_BY_NAME, *REASONING_BY_NAME}
    for path in POLICY:
        source = (ROOT / "src/derender" / path).read_text(encoding="utf-8")
        code = re.sub(r'"""[\s\S]*?"""', "", source)  # docstrings may name formats
        code = re.sub(r"#.*", "", code)
        quoted = set(re.findall(r"""["']([a-z0-9_]+)["']""", code))
        assert not quoted & names, (path, quoted & names)


def test_records_are_frozen_data() -> None:
    record: ReasoningRecord = REASONING_BY_NAME["qwen3"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        record.name = "other"  # type: ignore[misc]
