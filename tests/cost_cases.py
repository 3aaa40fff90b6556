"""Adversarial model outputs for every parser, at a chosen size, and a timer of the parsers'
cost per input character (``tests/test_cost_linear.py`` asserts it flat, ``bench/cost_sweep.py``
prints it).

Each parser pairing has a template of one complete call (``NAME`` and ``VALUE`` are filled
in); the cases built from it are what a model can write to make a machine work hard: the call
repeated (thousands of calls), each prefix of the call that ends at a piece of markup repeated
(unclosed markers, repeated openers, parameters without their closers: issue 22's
``<parameter=`` case is one of them), every marker and every marker less its last character
repeated, one long name, one long value (ASCII and 4-byte characters), deep nesting in the
value, and the template's markup mixed with text at random (seeded). Everything goes through
``derender.core.parsers.feed`` as the service calls it: non-streaming (the whole text, final)
and streamed (batches of ``BATCH`` characters, the stream state encoded after every batch, as
each call of a stream does).
"""

from __future__ import annotations

import gc
import random
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from derender.contract.requests import ChatRequest
from derender.core import parsers
from derender.core.parsers import ParserSettings, ParserState
from derender.core.parsers.formats.response_template import load_template
from derender.core.state.codec import Writer
from derender.core.state.stream import _encode_parser

BATCH = 64
"""Characters per streamed call."""

TOOLS = ({"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"},
                                     "o": {"type": "object"}}}}},)

COHERE = ('<|START_THINKING|>reasoning VALUE<|END_THINKING|><|START_RESPONSE|>a <co>VALUE'
          '</co: 0:[1]> b<|END_RESPONSE|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": '
          '"NAME", "parameters": {"a": "VALUE", "n": 1}}]<|END_ACTION|>')
"""cohere branch: Cohere Command A / 4 (both presets read it alike)."""
QWEN_XML = ("<tool_call>\n<function=NAME>\n<parameter=a>\nVALUE\n</parameter>\n"
            "<parameter=n>\n1\n</parameter>\n</function>\n</tool_call>")
DSML_CALL = ('<｜DSML｜{w}>\n<｜DSML｜invoke name="NAME">\n'
             '<｜DSML｜parameter name="a" string="true">VALUE</｜DSML｜parameter>\n'
             '<｜DSML｜parameter name="n" string="false">1</｜DSML｜parameter>\n'
             '</｜DSML｜invoke>\n</｜DSML｜{w}>')
M3 = "]<]minimax[>["
TEMPLATES: dict[str, str] = {
    "hermes": '<tool_call>{"name": "NAME", "arguments": {"a": "VALUE", "n": 1}}</tool_call>',
    "granite4": ('<tool_call>{"name": "NAME", "arguments": {"a": "VALUE", "n": 1}}</tool_call>'
                 " and VALUE "),
    "granite-20b-fc": ('<function_call> {"name": "NAME", "arguments": {"a": "VALUE", "n": 1}}'
                       " and VALUE "),
    "longcat": ('<longcat_tool_call>{"name": "NAME", "arguments": {"a": "VALUE", "n": 1}}'
                "</longcat_tool_call>"),
    "llama3_json": '{"name": "NAME", "parameters": {"a": "VALUE", "n": 1}}; ',
    "pythonic": '[NAME(a="VALUE", n=1), NAME(a="VALUE")]',
    "olmo3": '<function_calls>\nNAME(a="VALUE", n=1)\n  NAME(a="VALUE")\n</function_calls>',
    "llama4_pythonic": ('<|python_start|>[NAME(a="VALUE<|python_end|>", n=1), NAME(a="VALUE")]'
                        "<|python_end|>"),
    "deepseek_v3": ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n"
                    '```json\n{"a": "VALUE", "n": 1}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'),
    "deepseek_v31": ("<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>NAME<｜tool▁sep｜>"
                     '{"a": "VALUE", "n": 1}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'),
    "kimi_k2": ("<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0"
                '<|tool_call_argument_begin|>{"a": "VALUE", "n": 1}<|tool_call_end|>'
                "<|tool_calls_section_end|>"),
    "mistral": '[TOOL_CALLS]NAME[ARGS]{"a": "VALUE", "n": 1}',
    "qwen3_coder": QWEN_XML,
    "mimo": QWEN_XML,
    "step5": " VALUE \n" + QWEN_XML,
    "seed_oss": QWEN_XML.replace("tool_call>", "seed:tool_call>"),
    "deepseek_v32": DSML_CALL.replace("{w}", "function_calls"),
    "deepseek_v4": DSML_CALL.replace("{w}", "tool_calls"),
    "deepseek_v41": DSML_CALL.replace("{w}", "tool_calls").replace("｜DSML｜", "｜DSML｜ "),
    "glm45": "<tool_call>NAME\n<arg_key>a</arg_key>\n<arg_value>VALUE</arg_value>\n</tool_call>",
    "glm47": "<tool_call>NAME<arg_key>a</arg_key><arg_value>VALUE</arg_value></tool_call>",
    "gemma4": '<|tool_call>call:NAME{a:<|"|>VALUE<|"|>,n:1,o:{b:[1,2]}}<tool_call|>',
    "ling3": "<tool_call>NAME<arg_key>a</arg_key><arg_value>VALUE</arg_value></tool_call>",
    "hy_v3": ("<tool_calls>\n<tool_call>NAME<tool_sep>\n<arg_key>a</arg_key>\n<arg_value>VALUE"
              "</arg_value>\n<arg_key>n</arg_key>\n<arg_value>1</arg_value>\n</tool_call>\n"
              "</tool_calls>"),
    "minimax_m2": ('<minimax:tool_call>\n<invoke name="NAME">\n<parameter name="a">VALUE'
                   '</parameter>\n<parameter name="n">1</parameter>\n</invoke>\n'
                   "</minimax:tool_call>"),
    "minimax_m3": (f'{M3}<tool_call>{M3}<invoke name="NAME">{M3}<a>VALUE{M3}</a>{M3}<o>{M3}<b>1'
                   f"{M3}</b>{M3}</o>{M3}</invoke>{M3}</tool_call>"),
    # issue 19, JSON calls in a wrapper (branch i19-json)
    "phi4_mini_json": ('functools[{"name": "NAME", "arguments": {"a": "VALUE", "n": 1}}, '
                       '{"name": "NAME", "parameters": {}}]'),
    "jamba": ('<tool_calls>[{"name": "NAME", "arguments": {"a": "VALUE", "n": 1}}, '
              '{"arguments": {}, "name": "NAME"}]</tool_calls>'),
    "internlm": ('<|action_start|><|plugin|>\n{"name": "NAME", "parameters": {"a": "VALUE", '
                 '"n": 1}}<|action_end|>'),
    "gigachat3": ('Sure.<|message_sep|>\n\nfunction call<|role_sep|>\n{"name": "NAME", '
                  '"arguments": {"a": "VALUE", "n": 1}}'),
    # issue 19, Tencent Hy4 (branch glm2): the block held whole
    "hy_v4": ("<tool_calls:opensource>\n<tool_call:opensource>NAME\n<arg_key:opensource>a"
              "</arg_key:opensource><arg_value:opensource>VALUE</arg_value:opensource>\n"
              "<arg_key:opensource>n</arg_key:opensource><arg_value:opensource>1"
              "</arg_value:opensource>\n</tool_call:opensource>\n</tool_calls:opensource>"),
    # poolside Laguna (branch glm2): each call held whole
    "poolside_v1": ("<tool_call>NAME\n<arg_key>a</arg_key>\n<arg_value>VALUE</arg_value>\n"
                    "<arg_key>n</arg_key>\n<arg_value>1</arg_value>\n</tool_call>"),
    # branch pythonic2: LFM2's pythonic list between markers, an echo after it
    "lfm2": ('Sure. <|tool_call_start|>[NAME(a="VALUE", n=1), NAME(a="VALUE")]'
             '<|tool_call_end|> VALUE <|tool_call_end|> done'),
    "functiongemma": ("Sure. <start_function_call>call:NAME{a:<escape>VALUE<escape>,n:<escape>1"
                      "<escape>}<end_function_call> VALUE <start_function_call>oops"),
    # template branch: the response-template family, on ``HF_TEMPLATE`` (Qwen3-Coder's calls)
    "hf": QWEN_XML, "beam": QWEN_XML,
    # muse branch: one call message of Muse Spark's channels
    "muse": ('<|start|>assistant to=NAME<|message|><atem:function_calls>\n'
             '<atem:invoke name="NAME">\n<atem:parameter name="a">VALUE</atem:parameter>\n'
             '<atem:parameter name="n">1</atem:parameter>\n</atem:invoke>\n'
             '</atem:function_calls><|eom|>'),
    # cohere branch: Cohere Command's sections (a citation, an action read whole)
    "cohere_command3": COHERE, "cohere_command4": COHERE,
    # wrapped2: ERNIE 4.5 (hermes' tags, each call read whole)
    "ernie45": ('Ok\n\n<tool_call>\n{"arguments": {"a": "VALUE", "n": 1}, "name": "NAME"}\n'
                "</tool_call>"),
    "hunyuan_a13b": ('<tool_calls>[{"name": "NAME", "arguments": {"a": "VALUE", "n": 1}}, '
                     '{"arguments": {}, "name": "NAME"}]</tool_calls>'),
    # issue 19, branch qwen2: PLaMo 3
    "plamo3": ("<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
               "<|plamo:begin_tool_name:plamo|>NAME<|plamo:end_tool_name:plamo|>"
               "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"
               '{"a": "VALUE", "n": "1"}<|plamo:end_tool_arguments:plamo|>'
               "<|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>"),
    # branch k2h: K2 Horizon's IFM group, held whole (xml, the default tool_call_format)
    "k2_horizon": ("<ifm|tool_calls>\n<ifm|tool_call>NAME\n<ifm|arg_key>a</ifm|arg_key>"
                   "<ifm|arg_value>VALUE</ifm|arg_value>\n<ifm|arg_key>n</ifm|arg_key>"
                   "<ifm|arg_value>1</ifm|arg_value>\n</ifm|tool_call>\n</ifm|tool_calls>"),
}
# kimi3 (issue 20): Kimi K3's XTML channels
K3_CALL = ('<|open|>call tool="NAME"<|sep|><|open|>argument key="a" type="string"<|sep|>'
           'VALUE<|close|>argument<|sep|><|open|>argument key="n" type="number"<|sep|>1'
           '<|close|>argument<|sep|><|close|>call<|sep|>')
TEMPLATES["kimi_k3"] = ("<|open|>response<|sep|>VALUE<|close|>response<|sep|><|open|>tools<|sep|>"
                        + K3_CALL + "<|close|>tools<|sep|><|close|>message<|sep|>")
# branch qwen3x (issue 19): Step 3's block held whole, the text around it content
STEP3_HEAD = ('<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>'
              '<steptml:invoke name="')
TEMPLATES["step3"] = ("Sure. " + STEP3_HEAD + 'NAME"><steptml:parameter name="a">VALUE'
                      '</steptml:parameter><steptml:parameter name="n">1</steptml:parameter>'
                      "</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜> VALUE ")
# branch json3: Apertus' one-key call objects, text after the list and after the suffix
TEMPLATES["apertus"] = ('Sure. <|tools_prefix|>[{"NAME": {"a": "VALUE"}}, {}] VALUE '
                        "<|tools_suffix|> done <|tools_suffix|>")
"""One complete call per tool format, as the model writes it."""
# xlam2 (issue 19): xLAM's list, bare and in each of the places vLLM looks (held to the end)
TEMPLATES["xlam"] = ('[{"name": "NAME", "arguments": {"a": "VALUE", "n": 1}}]\n```json\n'
                     '[{"name": "NAME", "arguments": "VALUE"}]\n``` [TOOL_CALLS][] <tool_call>'
                     '[]</tool_call></think> VALUE')
# inkling branch (issue 20): Inkling's typed blocks (the call's JSON held whole, a text block
# after it)
TEMPLATES["inkling"] = ('<|message_model|>NAME<|content_invoke_tool_json|>{"name": "NAME", '
                        '"args": {"a": "VALUE", "n": "1"}}<|end_message|><|message_model|>'
                        "<|content_text|>VALUE<|end_message|>")
# granite-inkling: Granite 3.x's JSON list (an object that is no call dropped between calls)
# branch dots: <invoke> blocks in <dots_function_call>, each block held whole
TEMPLATES["dots"] = ('Sure. <dots_function_call>\n<invoke name="NAME">\n<parameter name="a">'
                     'VALUE</parameter>\n<parameter name="n">1</parameter>\n</invoke>\n'
                     '</dots_function_call> VALUE')
TEMPLATES["granite"] = ('Sure.\n<tool_call> [{"name": "NAME", "arguments": {"a": "VALUE", '
                        '"n": 1}}, {"x": "VALUE"}, {"arguments": {}, "name": "NAME"}]')
# branch minicpm5: MiniCPM5's XML calls, each held whole (a refused one, then text dropped);
# swept alone (its reasoning partner minicpmv is swept with qwen3_coder)
TEMPLATES["minicpm5"] = ('Sure.\n<function name="NAME"><param name="a">VALUE</param><param '
                         'name="n">1</param></function> x <function name="NAME"><param>x'
                         "</param></function>")

HF_TEMPLATE = {
    "start_anchor": "<|im_start|>assistant\n",
    "fields": {
        "thinking": {"open": "<think>", "close": "</think>"},
        "tool_calls": {
            "open_pattern": "<tool_call>\\n?<function=(?P<name>[^>\\n]+)>",
            "close_pattern": "</function>\\n?</tool_call>", "content": "xml-inline",
            "content_args": {"tag_pattern": "<parameter=(?P<key>[^>\\n]+)>\\n?"
                                            "(?P<value>.*?)\\n?</parameter>"},
            "repeats": True, "transform": {"type": "function", "function": {
                "name": "{name}", "arguments": "{content}"}}}}}
"""The response template the ``hf`` pairings read (a checkpoint's, at start-up)."""

DSML_HEAD = '<｜DSML｜tool_calls>\n<｜DSML｜invoke name="f">\n'
PARAMETERS: dict[str, tuple[str, str, str]] = {
    "hermes": ('<tool_call>{"name": "f", "arguments": {', '"a": "x", ', '"a": ['),
    "qwen3_coder": ("<tool_call>\n<function=f>\n", "<parameter=a>\nx\n</parameter>\n",
                    "<parameter=a>\nx\n"),
    "seed_oss": ("<seed:tool_call>\n<function=f>\n", "<parameter=a>\nx\n</parameter>\n",
                 "<parameter=a>\nx\n"),
    "deepseek_v4": (DSML_HEAD, '<｜DSML｜parameter name="a" string="true">x</｜DSML｜parameter>',
                    '<｜DSML｜parameter name="a" string="true">x'),
    "glm47": ("<tool_call>f", "<arg_key>a</arg_key><arg_value>x</arg_value>",
              "<arg_key>a</arg_key><arg_value>x"),
    "minimax_m2": ('<minimax:tool_call>\n<invoke name="f">\n',
                   '<parameter name="a">x</parameter>\n', '<parameter name="a">x\n'),
    "minimax_m3": (f'{M3}<tool_call>{M3}<invoke name="f">', f"{M3}<a>x{M3}</a>", f"{M3}<a>x"),
    "gemma4": ("<|tool_call>call:f{", 'a:<|"|>x<|"|>,', 'a:<|"|>x,'),
}
"""One call of many parameters: its head, a complete parameter, a parameter never closed
(issue 22: thousands of ``<parameter=`` without ``</parameter>`` were quadratic)."""
PARAMETERS["mimo"] = PARAMETERS["step5"] = PARAMETERS["qwen3_coder"]
PARAMETERS["granite4"] = PARAMETERS["ernie45"] = PARAMETERS["hermes"]
PARAMETERS["longcat"] = ('<longcat_tool_call>{"name": "f", "arguments": {', '"a": "x", ',
                         '"a": [')
PARAMETERS["granite-20b-fc"] = ('<function_call> {"name": "f", "arguments": {', '"a": "x", ',
                                '"a": [')
PARAMETERS["deepseek_v32"] = (DSML_HEAD.replace("tool_calls", "function_calls"),
                              *PARAMETERS["deepseek_v4"][1:])
PARAMETERS["deepseek_v41"] = tuple(  # type: ignore[assignment]
    part.replace("｜DSML｜", "｜DSML｜ ") for part in PARAMETERS["deepseek_v4"])
PARAMETERS["glm45"] = PARAMETERS["glm47"]
PARAMETERS["ling3"] = PARAMETERS["glm47"]
PARAMETERS["hy_v3"] = ("<tool_calls><tool_call>f<tool_sep>", *PARAMETERS["glm47"][1:])
PARAMETERS["hy_v4"] = ("<tool_calls:opensource><tool_call:opensource>f",  # glm2
                       "<arg_key:opensource>a</arg_key:opensource><arg_value:opensource>x"
                       "</arg_value:opensource>",
                       "<arg_key:opensource>a</arg_key:opensource><arg_value:opensource>x")
PARAMETERS["poolside_v1"] = ("<tool_call>f\n", *PARAMETERS["glm47"][1:])  # glm2
PARAMETERS["k2_horizon"] = ("<ifm|tool_calls><ifm|tool_call>f",  # branch k2h
                            "<ifm|arg_key>a</ifm|arg_key><ifm|arg_value>x</ifm|arg_value>",
                            "<ifm|arg_key>a</ifm|arg_key><ifm|arg_value>x")
PARAMETERS["dots"] = ('<dots_function_call><invoke name="f">',  # branch dots
                      '<parameter name="a">x</parameter>', '<parameter name="a">x')
PARAMETERS["kimi_k3"] = ('<|open|>tools<|sep|><|open|>call tool="f"<|sep|>',
                         '<|open|>argument key="a" type="string"<|sep|>x<|close|>argument<|sep|>',
                         '<|open|>argument key="a" type="object"<|sep|>x')
PARAMETERS["hf"] = PARAMETERS["beam"] = PARAMETERS["qwen3_coder"]
PARAMETERS["step3"] = (STEP3_HEAD + 'f">',  # branch qwen3x
                      '<steptml:parameter name="a">x</steptml:parameter>',
                      '<steptml:parameter name="a">x')
PARAMETERS["minicpm5"] = ('<function name="f">', '<param name="a">x</param>',  # minicpm5
                          '<param name="a">x')
# muse branch
PARAMETERS["muse"] = ('<|start|>assistant to=f<|message|><atem:function_calls>\n'
                      '<atem:invoke name="f">\n', '<atem:parameter name="a">x</atem:parameter>\n',
                      '<atem:parameter name="a">x\n')

# Muse Glimmer (issue 20): Muse Spark's call message (held whole within MAX_HELD)
TEMPLATES["muse_glimmer"] = TEMPLATES["muse"]
PARAMETERS["muse_glimmer"] = PARAMETERS["muse"]

THINK = "<think>reasoning VALUE</think>\n\n"
REASONING_TEMPLATES: dict[str, str] = {
    "qwen3": THINK + "<|im_start|><|im_end|>", "deepseek_r1": THINK, "deepseek_v3": THINK,
    "mistral": "[THINK]reasoning VALUE[/THINK]answer[TOOL_CALLS]",
    "mimo": THINK + "<tool_call>", "step3p5": THINK + "  \n <tool_call>",
    "seed_oss": "<seed:think>reasoning VALUE</seed:think><seed:tool_call>",
    "nemotron_v3": THINK + "  <tool_call>", "kimi_k2": THINK + "<|tool_calls_section_begin|>",
    "minimax_m2_append_think": THINK, "minimax_m3": "<mm:think>reasoning VALUE</mm:think>",
    "gemma4": "<|channel>thought\nreasoning VALUE<channel|>answer<|tool_call>",
    "deepseek_v4": THINK, "deepseek_v41": THINK, "glm45": THINK, "glm47": THINK, "step5": THINK,
    "holo2": THINK, "ling3": THINK, "hy_v3": THINK,
    "minimax_m2": THINK + "<minimax:tool_call>",
    "olmo3": "<think>reasoning VALUE</think>answer",
    "hy_v4": "<think:opensource>reasoning VALUE</think:opensource>\n\n",  # glm2
    "poolside_v1": THINK,  # glm2
    "kimi_k3": "reasoning VALUE<|close|>think<|sep|>",  # kimi3 (issue 20)
    # template branch: the response-template family (``HF_TEMPLATE``)
    "hf": THINK, "beam": THINK,
    # muse branch: a reasoning message, then a commentary one
    "muse": (" to=self<|message|>reasoning VALUE<|eom|><|start|>assistant to=commentary"
             "<|message|>answer<|eom|>"),
    # cohere branch: thinking, then an answer with a citation
    "cohere_command3": ("<|START_THINKING|>reasoning VALUE<|END_THINKING|><|START_RESPONSE|>"
                        "answer <co>VALUE</co: 0:[1]><|END_RESPONSE|>"),
    "cohere_command4": ("reasoning VALUE<|START_TEXT|>answer <co>VALUE</co: 0:[1]><|END_TEXT|>"
                        "<|START_RESPONSE|>x"),
    # wrapped2: ERNIE 4.5's answer markers after the reasoning
    "ernie45": "reasoning VALUE</think>\n<response>answer VALUE</response> VALUE</response>",
    "hunyuan_a13b": "<think>\nreasoning VALUE\n</think>\n<answer>\nanswer VALUE ",
    # branch qwen2
    "plamo3": "reasoning VALUE<|plamo:end_think:plamo|>answer<|plamo:begin_",
    "step3": "<think>reasoning VALUE</think>answer</think>",
    "minicpmv": "reasoning VALUE\\n`a\\nb`</think>answer\\n$x$<reserved_12>\\<tool_call>",
    # branch k2h: held until the end marker (of "high", the default effort)
    "k2_horizon": "<ifm|think>reasoning VALUE</ifm|think>answer ",
}
"""Text each reasoning parser reads markers in."""
# granite-inkling: Granite 4.2's reasoning (nemotron_v3's markers; newlines open the content)
REASONING_TEMPLATES["granite_thinking_parser"] = THINK + "\n\n  <tool_call>"
# glimmer branch: Granite 3.x's text markers (a second thought marker, a near-marker)
REASONING_TEMPLATES["granite"] = ("Here is my thought process:reasoning VALUE Here is my "
                                  "thought process: Here is my res Here is my response:answer")
# inkling branch (issue 20): a thinking block, then a header and a text block
REASONING_TEMPLATES["inkling"] = ("<|content_thinking|>reasoning VALUE<|end_message|>"
                                  "<|message_model|>VALUE<|content_text|>answer<|end_message|>")

# Muse Glimmer (issue 20): two reasoning blocks (joined with a newline) and an answer
REASONING_TEMPLATES["muse_glimmer"] = (
    " to=self<|message|>reasoning VALUE<|eom|><|start|>assistant to=self<|message|>VALUE<|eom|>"
    "<|start|>assistant to=user<|message|>answer<|eot|>")

PAIRS: tuple[tuple[str | None, str | None], ...] = (
    *((None, t) for t in TEMPLATES),
    *((r, None) for r in REASONING_TEMPLATES),
    ("qwen3", "hermes"), ("qwen3", "qwen3_coder"), ("step3p5", "qwen3_coder"),
    ("nemotron_v3", "qwen3_coder"), ("mimo", "mimo"), ("seed_oss", "seed_oss"),
    ("mistral", "mistral"), ("kimi_k2", "kimi_k2"), ("gemma4", "gemma4"), ("olmo3", "olmo3"),
    ("deepseek_v4", "deepseek_v4"), ("deepseek_v41", "deepseek_v41"), ("glm47", "glm47"),
    ("minimax_m2", "minimax_m2"), ("minimax_m3", "minimax_m3"), ("step5", "step5"),
    ("holo2", "hermes"), ("ling3", "ling3"), ("hy_v3", "hy_v3"),
    ("glm47", "hermes"), ("deepseek_v4", "qwen3_coder"), ("minimax_m2", "pythonic"),
    ("hy_v4", "hy_v4"), ("poolside_v1", "poolside_v1"),  # glm2
    ("kimi_k3", "kimi_k3"),  # kimi3 (issue 20)
    ("hf", "hf"), ("beam", "beam"),  # template branch
    ("muse", "muse"),  # muse branch
    ("ernie45", "ernie45"), ("hunyuan_a13b", "hunyuan_a13b"),  # wrapped2
    # granite-inkling
    ("granite_thinking_parser", "qwen3_coder"),
    ("plamo3", "plamo3"), ("minicpmv", "qwen3_coder"), ("step3", "hermes"),  # branch qwen2
    ("k2_horizon", "k2_horizon"),  # branch k2h
    ("inkling", "inkling"),  # inkling branch
    ("muse_glimmer", "muse_glimmer"),  # Muse Glimmer (issue 20)
)
"""(reasoning parser, tool parser) pairings: every tool format and every reasoning parser
alone, and each family's own pairing (step3p5 and nemotron_v3 with qwen3_coder, issue 22),
and engine reasoning parsers with another family's tool parser (two machines, issue 19)."""
# musepair: a family reasoning parser before another family's tool parser (its machine first;
# muse's tool parser in its alone mode is (None, "muse") above; Cohere's reasoning parser with
# another tool parser reads as with its own)
PAIRS = (*PAIRS, ("muse", "hermes"))

_MARKUP = re.compile(r"<[^<>]{1,40}>|\[[A-Z_/]+\]|\]<\]minimax\[>\[|<\|\"\|>")


class _Vocab:
    """What ``reasoning.start`` asks of a vocabulary: no marker is a single token here."""

    def token_id(self, token: str) -> int | None:
        return None

    def decode(self, ids: list[int]) -> str:
        return ""

    def text_view(self, skip_special: bool, spaces: bool = True) -> _Vocab:
        return self

    def spelled(self, marker: str) -> str:
        return marker

    def spellings(self, markup: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
        return tuple((marker, marker) for marker in markup)


def settings(reasoning_parser: str | None, tool_parser: str | None) -> ParserSettings:
    """The parser settings of a request with ``TOOLS`` and ``tool_choice`` "auto", thinking on
    (every switch the formats read)."""
    request = ChatRequest.model_validate({
        "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS, "tool_choice": "auto",
        "chat_template_kwargs": {"enable_thinking": True, "thinking": True,
                                 "thinking_mode": "enabled", "reasoning_effort": "high"}})
    template = (load_template(HF_TEMPLATE)
                if {"hf", "beam"} & {reasoning_parser, tool_parser} else None)
    return parsers.parser_settings(reasoning_parser, tool_parser, request,
                                   _Vocab(), template)  # type: ignore[arg-type]


def start(s: ParserSettings) -> ParserState:
    return parsers.start(s, _Vocab(), None)  # type: ignore[arg-type]


def template(reasoning_parser: str | None, tool_parser: str | None) -> str:
    parts = []
    if reasoning_parser is not None:
        parts.append(REASONING_TEMPLATES[reasoning_parser])
    if tool_parser is not None:
        parts.append(TEMPLATES[tool_parser])
    return "".join(parts)


def _fill(text: str, name: str = "f", value: str = "v") -> str:
    return text.replace("NAME", name).replace("VALUE", value)


def _repeat(unit: str, size: int) -> str:
    return unit * max(1, size // max(1, len(unit)))


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    build: Callable[[int], str]
    """The output at (about) this many characters."""


def cases(reasoning_parser: str | None, tool_parser: str | None) -> list[Case]:
    """The adversarial outputs of a pairing."""
    base = template(reasoning_parser, tool_parser)
    call = _fill(base)
    out = [Case("calls", lambda n: _repeat(call, n)),
           Case("long-name", lambda n: _fill(base, name="n" * n)),
           Case("long-value", lambda n: _fill(base, value="x" * n)),
           Case("long-value-4byte", lambda n: _fill(base, value="\U0001F600" * n)),
           Case("nesting", lambda n: _fill(base, value='{"a": [' * (n // 7))),
           Case("brackets", lambda n: _fill(base, value="[" * n))]
    if tool_parser in PARAMETERS:
        head, closed, unclosed = PARAMETERS[tool_parser]
        out.append(Case("parameters", lambda n: head + _repeat(closed, n)))
        out.append(Case("unclosed-parameters", lambda n: head + _repeat(unclosed, n)))
    markers = sorted({m.group() for m in _MARKUP.finditer(call)})
    cuts = sorted({m.end() for m in _MARKUP.finditer(call)}
                  | {m.start() + len(m.group()) // 2 for m in _MARKUP.finditer(call)})
    for at in cuts:
        out.append(Case(f"prefix@{at}", lambda n, at=at: _repeat(call[:at], n)))
    for marker in markers:
        out.append(Case(f"repeat {marker!r}", lambda n, m=marker: _repeat(m, n)))
        out.append(Case(f"repeat {marker[:-1]!r}", lambda n, m=marker[:-1]: _repeat(m + "x", n)))
    pieces = [*markers, "f", "a", "1", " ", "\n", '"', "{", "}", "[", "]", ",", ":", "=",
              "<", ">", "\U0001F600"]

    def mixed(n: int) -> str:
        rng = random.Random(22)
        text: list[str] = []
        size = 0
        while size < n:
            piece = rng.choice(pieces)
            text.append(piece)
            size += len(piece)
        return "".join(text)
    out.append(Case("mixed", mixed))
    return out


def run(s: ParserSettings, text: str, streamed: bool) -> int:
    """Feed ``text`` as the service does; the number of characters out (reasoning, content,
    arguments), so nothing is optimised away."""
    state = start(s)
    if not streamed:
        delta, _ = parsers.feed(s, state, text, True)
        return len(delta.reasoning) + len(delta.content) + sum(len(c.arguments)
                                                               for c in delta.calls)
    out = 0
    for at in range(0, len(text), BATCH):
        delta, state = parsers.feed(s, state, text[at:at + BATCH], False)
        out += len(delta.content)
        w = Writer()
        _encode_parser(w, state)
    delta, state = parsers.feed(s, state, "", True)
    return out + len(delta.content)


def per_char(s: ParserSettings, text: str, streamed: bool, repeats: int = 3) -> float:
    """CPU seconds per input character (the process's own time: other work on the machine does
    not count): the best of ``repeats`` runs, gc off."""
    best = float("inf")
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            began = time.process_time()
            run(s, text, streamed)
            best = min(best, time.process_time() - began)
    finally:
        if enabled:
            gc.enable()
    return best / max(1, len(text))


@dataclass(frozen=True, slots=True)
class Sweep:
    pairing: str
    case: str
    streamed: bool
    per_char: tuple[float, ...]
    """Seconds per character at each size."""

    @property
    def ratios(self) -> tuple[float, ...]:
        return tuple(p / self.per_char[0] for p in self.per_char)


def pairing_name(reasoning_parser: str | None, tool_parser: str | None) -> str:
    return f"{reasoning_parser or '-'}+{tool_parser or '-'}"


def sweep(sizes: Sequence[int], pairs: Sequence[tuple[str | None, str | None]] = PAIRS,
          repeats: int = 3, modes: Sequence[bool] = (False, True),
          only: Callable[[str], bool] | None = None) -> Iterator[Sweep]:
    """Per-character cost of every case of every pairing at each size."""
    for reasoning_parser, tool_parser in pairs:
        s = settings(reasoning_parser, tool_parser)
        for case in cases(reasoning_parser, tool_parser):
            if only is not None and not only(case.name):
                continue
            texts = [case.build(n) for n in sizes]
            for streamed in modes:
                costs = tuple(per_char(s, t, streamed, repeats) for t in texts)
                yield Sweep(pairing_name(reasoning_parser, tool_parser), case.name, streamed,
                            costs)


def describe(result: Sweep) -> str:
    ratios = " ".join(f"{r:5.2f}" for r in result.ratios)
    return (f"{result.pairing:32} {'stream' if result.streamed else 'whole ':6} "
            f"{result.case:40.40} {result.per_char[0] * 1e6:8.3f} us/char  x{ratios}")

