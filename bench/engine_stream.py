"""Streaming the parser-engine formats (DeepSeek DSML, GLM, MiniMax M2; and Step 5): core cost
per chunk and the largest stream_state, as ``bench/parser_stream.py`` (a) and (b) measure them
for Qwen3.

Seven 4096-id outputs, 1 id per chunk, as a (thinking) model writes a tool call:

  DSML (``deepseek_v4`` reasoning and tool parsers, DeepSeek-V4's vocabulary from
  ``tests/models/deepseek-v4`` with ``deepseek-v4-native``'s configs): ~3,500 ids of reasoning
  (``bench/corpus.txt``; the output starts in reasoning, thinking being on by default) +
  ``</think>\\n\\n<｜DSML｜tool_calls>\\n<｜DSML｜invoke name="get_weather">`` + parameters
  ``city`` ("Lisbon") and ``notes`` (corpus text, ``string="true"``) + the closing tags + EOS 1.

  GLM (``glm47`` reasoning and tool parsers, ``tests/models/glm-4.7-flash``): ~3,500 ids of
  reasoning + ``</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Lisbon
  </arg_value><arg_key>notes</arg_key><arg_value>…</arg_value></tool_call>`` + EOS 154827.

  MiniMax M2 (``minimax_m2`` reasoning and tool parsers, ``tests/models/minimax-m2.7``, its
  tokenizer fetched by ``make test``): ~3,500 ids of reasoning + ``</think>\n\n
  <minimax:tool_call>\n<invoke name="get_weather">\n<parameter name="city">Lisbon
  </parameter>\n<parameter name="notes">…</parameter>\n</invoke>\n</minimax:tool_call>`` +
  EOS 200020.

  Step 5 (``step5`` reasoning and tool parsers, the Qwen3 vocabulary standing in):
  ~3,500 ids of reasoning + ``</think>\n\n<tool_call>\n<function=get_weather>\n
  <parameter=city>\nLisbon\n</parameter>\n<parameter=notes>\n…\n</parameter>\n</function>
  \n</tool_call>`` + EOS 151645. Holo2: the same output read by the ``holo2`` reasoning parser
  and the ``qwen3_coder`` tool parser.

  Granite 4 (``granite4`` tool parser alone, ``granite4-standin``, its vocabulary derived at
  test time): ~3,500 ids of content + ``<tool_call>\n{"name": "get_weather", "arguments":
  {"city": "Lisbon", "notes": "…"}}\n</tool_call>`` (the notes JSON-escaped) + EOS 100257;
  granite-20b-fc (``--only granite-fc``) the same with ``<function_call> {…}`` and no closing
  tag; LongCat (``--only longcat``, ``longcat`` on Qwen3's vocabulary) with
  ``<longcat_tool_call>`` tags, EOS 151645.

  Phi-4-mini JSON (``phi4_mini_json`` tool parser alone, ``tests/models/phi4-mini-standin``,
  derived from gpt-oss's vocabulary): ~3,500 ids of content + ``functools[{"name":
  "get_weather", "arguments": {"city": "Lisbon", "notes": "…"}}]`` (the notes a JSON string)
  + EOS 200020 ``<|end|>``. Jamba (``jamba`` alone, ``tests/models/jamba-standin``): the same
  in ``<tool_calls>[…]</tool_calls>``, EOS 50256. InternLM2 (``internlm``,
  ``tests/models/internlm2-standin``): ``<|action_start|><|plugin|>\n{…}<|action_end|>``, EOS
  92542. GigaChat 3 (``gigachat3``, ``tests/models/gigachat3-standin``):
  ``<|function_call|>{…}``, EOS 50256. FunctionGemma (``functiongemma``,
  ``tests/models/functiongemma-standin``): ``<start_function_call>call:get_weather{city:
  <escape>Lisbon<escape>,notes:<escape>…<escape>}<end_function_call>``, EOS 106.

Each stream is first derendered whole, call after call, and checked: the folded stream and the
non-streaming answer both give the reasoning text (Granite: the content text), no content
(Granite: no reasoning) and the one ``get_weather`` call
with the arguments built. Then chunks 10, 1,000 (reasoning) and 4,000 (inside the ``notes``
value) are replayed with the state the stream had there (verify + decode, derender, encode +
sign), interleaved, medians, gc off. Target: flat, chunk 4,000 / chunk 10 ≤ 1.2×.

    python bench/engine_stream.py                 # both streams
    python bench/engine_stream.py --only glm      # one (also ling3: GLM's stream, ``ling3``
                                                  # parsers; issue 19)
    python bench/engine_stream.py --scale 0.1     # fewer rounds
"""

from __future__ import annotations

import argparse
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import CORPUS, REPO, load_line, real_text_ids, run_formats, stream_summary
from parser_stream import Folded
from stream_chunks import Position, call, time_passes
from tokenizers import Tokenizer

from derender.contract.requests import DerenderChatRequest, DerenderChatStreamRequest
from derender.core.chat import derender_chat
from derender.core.registry import ServedModel, load_vocabulary, read_model_info

MODELS = REPO / "tests" / "models"
STREAM_IDS = 4096
NOTES_IDS = 480
POSITIONS = (10, 1000, 4000)
ROUNDS = 20000
TARGET_FLAT = 1.2
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "notes": {"type": "string"}}, "required": ["city"]}}}]
D = "｜DSML｜"


@dataclass(frozen=True)
class Format:
    name: str
    model: str
    tokenizer_from: str
    configs_from: str
    parser: str
    eos: int
    head: str
    """Text between the reasoning and the notes value."""
    tail: str
    """Text after the notes value."""
    reasoning_parser: str = ""
    """The reasoning parser (default: ``parser``)."""
    folder: Path | None = None
    """Where the tokenizer and configs are (default: ``tests/models/<tokenizer_from>``)."""
    lead: str = "reasoning"
    """What the ~3,500 ids before the call are: "reasoning" (the format is both parsers) or
    "content" (a tool parser alone, the call after the text)."""
    json_notes: bool = False
    """The notes value is inside a JSON string (escaped as JSON)."""
    kwargs: tuple[tuple[str, str], ...] = ()
    """The request's ``chat_template_kwargs`` (what turns its reasoning parser on)."""
    prompt: str = "What's the weather in Lisbon?"
    """The prompt's text (encoded with the model's vocabulary)."""
    prefix: str = ""
    """Text before the reasoning (its opening markup)."""
    strip_reasoning: bool = True
    """The format drops the reasoning's trailing whitespace."""
    notes_ids: int = NOTES_IDS
    """Ids of the notes value."""


FORMATS = {
    "dsml": Format("DSML", "deepseek-v4-native", "deepseek-v4", "deepseek-v4-native",
                   "deepseek_v4", 1,
                   f'</think>\n\n<{D}tool_calls>\n<{D}invoke name="get_weather">\n'
                   f'<{D}parameter name="city" string="true">Lisbon</{D}parameter>\n'
                   f'<{D}parameter name="notes" string="true">',
                   f"</{D}parameter>\n</{D}invoke>\n</{D}tool_calls>"),
    "glm": Format("GLM", "glm-4.7-flash", "glm-4.7-flash", "glm-4.7-flash", "glm47", 154827,
                  "</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Lisbon"
                  "</arg_value><arg_key>notes</arg_key><arg_value>",
                  "</arg_value></tool_call>"),
    # ling3 (issue 19): GLM-4.7's grammar on its stand-in vocabulary, GLM-4.7-Flash's
    "ling3": Format("Ling 3", "glm-4.7-flash", "glm-4.7-flash", "glm-4.7-flash", "ling3",
                    154827,
                    "</think><tool_call>get_weather<arg_key>city</arg_key><arg_value>Lisbon"
                    "</arg_value><arg_key>notes</arg_key><arg_value>",
                    "</arg_value></tool_call>"),
    # hy_v3 (issue 19): reasoning read when reasoning_effort asks for it
    "hy_v3": Format("Hy3", "hy3-standin", "hy3-standin", "hy3-standin", "hy_v3", 50256,
                    "</think>\n<tool_calls>\n<tool_call>get_weather<tool_sep>\n<arg_key>city"
                    "</arg_key>\n<arg_value>Lisbon</arg_value>\n<arg_key>notes</arg_key>\n"
                    "<arg_value>", "</arg_value>\n</tool_call>\n</tool_calls>",
                    kwargs=(("reasoning_effort", "high"),)),
    "minimax": Format("MiniMax M2", "minimax-m2.7", "minimax-m2.7", "minimax-m2.7",
                      "minimax_m2", 200020,
                      '</think>\n\n<minimax:tool_call>\n<invoke name="get_weather">\n'
                      '<parameter name="city">Lisbon</parameter>\n<parameter name="notes">',
                      "</parameter>\n</invoke>\n</minimax:tool_call>"),
    "step5": Format("Step 5", "qwen3", "qwen3", "qwen3", "step5", 151645,
                    "</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n"
                    "Lisbon\n</parameter>\n<parameter=notes>\n",
                    "\n</parameter>\n</function>\n</tool_call>",
                    folder=REPO / "layers" / "tokenizers" / "qwen3"),
    "granite": Format("Granite 4", "granite4-standin", "granite4-standin", "granite4-standin",
                      "granite4", 100257,
                      '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lisbon", '
                      '"notes": "', '"}}\n</tool_call>', lead="content", json_notes=True),
    "granite-fc": Format("granite-20b-fc", "granite4-standin", "granite4-standin",
                         "granite4-standin", "granite-20b-fc", 100257,
                         '<function_call> {"name": "get_weather", "arguments": {"city": '
                         '"Lisbon", "notes": "', '"}}', lead="content", json_notes=True),
    "longcat": Format("LongCat", "qwen3", "layers/tokenizers/qwen3", "layers/tokenizers/qwen3",
                      "longcat", 151645,
                      '<longcat_tool_call>\n{"name": "get_weather", "arguments": {"city": '
                      '"Lisbon", "notes": "', '"}}\n</longcat_tool_call>', lead="content",
                      json_notes=True),
    "phi4": Format("Phi-4-mini JSON", "phi4-mini-standin", "phi4-mini-standin",
                   "phi4-mini-standin", "phi4_mini_json", 200020,
                   'functools[{"name": "get_weather", "arguments": {"city": "Lisbon", "notes": "',
                   '"}}]', lead="content", json_notes=True),
    "jamba": Format("Jamba", "jamba-standin", "jamba-standin", "jamba-standin", "jamba", 50256,
                    '<tool_calls>[{"name": "get_weather", "arguments": {"city": "Lisbon", '
                    '"notes": "', '"}}]</tool_calls>', lead="content", json_notes=True),
    "internlm": Format("InternLM2", "internlm2-standin", "internlm2-standin",
                       "internlm2-standin", "internlm", 92542,
                       '<|action_start|><|plugin|>\n{"name": "get_weather", "parameters": '
                       '{"city": "Lisbon", "notes": "', '"}}<|action_end|>', lead="content",
                       json_notes=True),
    "gigachat3": Format("GigaChat 3", "gigachat3-standin", "gigachat3-standin",
                        "gigachat3-standin", "gigachat3", 50256,
                        '<|function_call|>{"name": "get_weather", "arguments": '
                        '{"city": "Lisbon", "notes": "', '"}}', lead="content", json_notes=True),
    # hy_v4 (issue 19, branch glm2): thinking on by default, the call block held whole
    "hy_v4": Format("Hy4", "hy4-standin", "hy4-standin", "hy4-standin", "hy_v4", 50256,
                    "</think:opensource>\n<tool_calls:opensource>\n<tool_call:opensource>"
                    "get_weather\n<arg_key:opensource>city</arg_key:opensource>"
                    "<arg_value:opensource>Lisbon</arg_value:opensource>\n"
                    "<arg_key:opensource>notes</arg_key:opensource><arg_value:opensource>",
                    "</arg_value:opensource>\n</tool_call:opensource>\n"
                    "</tool_calls:opensource>"),
    # k2_horizon (issue 19, branch k2h): reasoning held up to 512 characters, then streamed;
    # the IFM group held whole (xml, the default tool_call_format)
    "k2_horizon": Format("K2 Horizon", "k2h-standin", "k2h-standin", "k2h-standin",
                         "k2_horizon", 50256,
                         "</ifm|think>\n<ifm|tool_calls>\n<ifm|tool_call>get_weather\n"
                         "<ifm|arg_key>city</ifm|arg_key><ifm|arg_value>Lisbon</ifm|arg_value>"
                         "\n<ifm|arg_key>notes</ifm|arg_key><ifm|arg_value>",
                         "</ifm|arg_value>\n</ifm|tool_call>\n</ifm|tool_calls>"),
    # poolside_v1 (issue 19, branch glm2): thinking by the kwargs, each call held whole
    "poolside_v1": Format("Laguna", "poolside-standin", "poolside-standin", "poolside-standin",
                          "poolside_v1", 50256,
                          "</think>\n<tool_call>get_weather\n<arg_key>city</arg_key>\n"
                          "<arg_value>Lisbon</arg_value>\n<arg_key>notes</arg_key>\n"
                          "<arg_value>", "</arg_value>\n</tool_call>",
                          kwargs=(("thinking", "true"),)),
    # branch pythonic2: FunctionGemma's call after the content
    "functiongemma": Format("FunctionGemma", "functiongemma-standin", "functiongemma-standin",
                            "functiongemma-standin", "functiongemma", 106,
                            "<start_function_call>call:get_weather{city:<escape>Lisbon<escape>,"
                            "notes:<escape>", "<escape>}<end_function_call>", lead="content"),
    # plamo3 (issue 19, branch qwen2): every marker several ids; the notes run past the
    # arguments' hold (1,024 characters), so they stream as written from there
    "plamo3": Format("PLaMo 3", "plamo3-standin", "plamo3-standin", "plamo3-standin", "plamo3",
                     50260,
                     "<|plamo:end_think:plamo|><|plamo:begin_tool_requests:plamo|>"
                     "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>"
                     "get_weather<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:"
                     'plamo|><|plamo:constrain|>json<|plamo:msg|>{"city": "Lisbon", "notes": "',
                     '"}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>'
                     "<|plamo:end_tool_requests:plamo|>", json_notes=True),
    # dots (issue 19, branch dots): the content, then the block held whole until its end
    "dots": Format("dots", "dots-standin", "dots-standin", "dots-standin", "dots", 50256,
                   '<dots_function_call>\n<invoke name="get_weather">\n<parameter name="city">'
                   'Lisbon</parameter>\n<parameter name="notes">',
                   "</parameter>\n</invoke>\n</dots_function_call>", lead="content"),
}
# kimi_k3 (issue 20, branch kimi3): Kimi K3's XTML channels on its stand-in vocabulary
FORMATS["kimi_k3"] = Format(
    "Kimi K3", "kimi-k3-standin", "kimi-k3-standin", "kimi-k3-standin", "kimi_k3", 163586,
    '<|close|>think<|sep|><|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|>'
    '<|open|>argument key="city" type="string"<|sep|>Lisbon<|close|>argument<|sep|>'
    '<|open|>argument key="notes" type="string"<|sep|>',
    "<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>")
# template branch: hf reads the checkpoint's response_template (hf-xml-standin's: the prompt
# opens <think>, calls as <function=NAME> with parameters)
FORMATS["hf"] = Format("hf (response template)", "hf-xml-standin", "hf-xml-standin",
                       "hf-xml-standin", "hf", 151645,
                       "\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n"
                       "Lisbon\n</parameter>\n<parameter=notes>\n",
                       "\n</parameter>\n</function>\n</tool_call>",
                       prompt="<|im_start|>user\nWhat's the weather in Lisbon?<|im_end|>\n"
                              "<|im_start|>assistant\n<think>\n")
# muse branch: Muse Spark, a reasoning message then a call message
FORMATS["muse"] = Format("Muse Spark", "muse-spark-standin", "muse-spark-standin",
                         "muse-spark-standin", "muse", 200008,
                         '<|eom|><|start|>assistant to=get_weather<|message|>'
                         '<atem:function_calls>\n<atem:invoke name="get_weather">\n'
                         '<atem:parameter name="city">Lisbon</atem:parameter>\n'
                         '<atem:parameter name="notes">',
                         "</atem:parameter>\n</atem:invoke>\n</atem:function_calls>",
                         prefix=" to=self<|message|>", strip_reasoning=False,
                         notes_ids=200)  # a call is held whole (as vLLM sends it), to 2 KB
# musepair: the muse reasoning parser before hermes (its machine first, hermes on the answer)
FORMATS["muse-hermes"] = Format("Muse Spark with hermes", "muse-spark-standin",
                                "muse-spark-standin", "muse-spark-standin", "hermes", 200008,
                                '<|eom|><|start|>assistant to=user<|message|><tool_call>\n'
                                '{"name": "get_weather", "arguments": {"city": "Lisbon", '
                                '"notes": "', '"}}\n</tool_call>', reasoning_parser="muse",
                                prefix=" to=self<|message|>", strip_reasoning=False,
                                json_notes=True)
# cohere branch: Cohere Command 4 (cohere_command4 both), thinking then an action section
FORMATS["cohere"] = Format("Cohere Command 4", "cohere-standin", "cohere-standin",
                           "cohere-standin", "cohere_command4", 255001,
                           '<|END_THINKING|><|START_ACTION|>[{"tool_call_id": "0", "tool_name": '
                           '"get_weather", "parameters": {"city": "Lisbon", "notes": "',
                           '"}}]<|END_ACTION|>', prefix="<|START_THINKING|>", json_notes=True,
                           notes_ids=200)  # an action is held whole (2 KB)
# wrapped2: ERNIE 4.5 (ernie45 reasoning and tool parsers): reasoning, then a call too long
# to be read whole (it streams as hermes')
FORMATS["ernie45"] = Format("ERNIE 4.5", "ernie45-standin", "ernie45-standin",
                            "ernie45-standin", "ernie45", 50256,
                            '</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": '
                            '{"city": "Lisbon", "notes": "', '"}}\n</tool_call>',
                            json_notes=True)
FORMATS["hunyuan_a13b"] = Format("Hunyuan-A13B", "hunyuan-a13b-standin", "hunyuan-a13b-standin",
                                 "hunyuan-a13b-standin", "hunyuan_a13b", 50256,
                                 '<tool_calls>[{"name": "get_weather", "arguments": {"city": '
                                 '"Lisbon", "notes": "', '"}}]</tool_calls>', lead="content",
                                 json_notes=True)
FORMATS["holo2"] = Format("Holo2", "qwen3", "qwen3", "qwen3", "qwen3_coder", 151645,
                          FORMATS["step5"].head, FORMATS["step5"].tail, reasoning_parser="holo2",
                          folder=REPO / "layers" / "tokenizers" / "qwen3")
# granite-inkling: Granite 4.2's reasoning (granite_thinking_parser) with qwen3_coder's calls
FORMATS["granite-thinking"] = Format("Granite 4.2 thinking", "granite4-standin",
                                     "granite4-standin", "granite4-standin", "qwen3_coder",
                                     100257, FORMATS["step5"].head, FORMATS["step5"].tail,
                                     reasoning_parser="granite_thinking_parser")
# granite-inkling: Granite 3.x's JSON list (the granite tool parser alone)
FORMATS["granite-array"] = Format("Granite 3 JSON list", "granite4-standin", "granite4-standin",
                                  "granite4-standin", "granite", 100257,
                                  '<tool_call> [{"name": "get_weather", "arguments": {"city": '
                                  '"Lisbon", "notes": "', '"}}]', lead="content",
                                  json_notes=True)
# minicpmv (issue 19, branch qwen2): the same output read by the minicpmv reasoning parser
# (newline escapes recovered) and the qwen3_coder tool parser
FORMATS["minicpmv"] = Format("MiniCPM-V", "qwen3", "qwen3", "qwen3", "qwen3_coder", 151645,
                             FORMATS["step5"].head, FORMATS["step5"].tail,
                             reasoning_parser="minicpmv",
                             folder=REPO / "layers" / "tokenizers" / "qwen3")
# minicpm5 (issue 19, branch minicpm5): MiniCPM5's XML call after minicpmv's reasoning, on
# Qwen3's vocabulary (the call held whole until its </function>)
FORMATS["minicpm5"] = Format("MiniCPM5", "qwen3", "qwen3", "qwen3", "minicpm5", 151645,
                             '</think>\n\n<function name="get_weather"><param name="city">'
                             'Lisbon</param><param name="notes">', "</param></function>",
                             reasoning_parser="minicpmv",
                             folder=REPO / "layers" / "tokenizers" / "qwen3")
# step3 reasoning (issue 19, branch qwen2) with the hermes tool parser, on Qwen3's vocabulary
FORMATS["step3"] = Format("Step 3", "qwen3", "qwen3", "qwen3", "hermes", 151645,
                          '</think>\n<tool_call>\n{"name": "get_weather", "arguments": '
                          '{"city": "Lisbon", "notes": "', '"}}\n</tool_call>',
                          reasoning_parser="step3", json_notes=True,
                          folder=REPO / "layers" / "tokenizers" / "qwen3")
# branch qwen3x (issue 19): the step3 tool parser with its reasoning parser, the block held whole
FORMATS["step3-tools"] = Format(
    "Step 3 tools", "qwen3", "qwen3", "qwen3", "step3", 151645,
    '</think>\n<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜>'
    '<steptml:invoke name="get_weather">\n<steptml:parameter name="city">Lisbon'
    '</steptml:parameter>\n<steptml:parameter name="notes">',
    "</steptml:parameter>\n</steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>",
    reasoning_parser="step3", folder=REPO / "layers" / "tokenizers" / "qwen3")
# branch json3: Apertus' one-key call object between its markers (a stand-in vocabulary)
FORMATS["apertus"] = Format("Apertus", "apertus-standin", "apertus-standin", "apertus-standin",
                            "apertus", 50256,
                            '<|tools_prefix|>[{"get_weather": {"city": "Lisbon", "notes": "',
                            '"}}]<|tools_suffix|>', lead="content", json_notes=True)

# glimmer branch: Granite 3.x's text-marker reasoning (granite) with its granite tool parser
FORMATS["granite-reasoning"] = Format("Granite 3 thinking", "granite4-standin",
                                      "granite4-standin", "granite4-standin", "granite",
                                      100257, "Here is my response: " + FORMATS[
                                          "granite-array"].head, FORMATS["granite-array"].tail,
                                      reasoning_parser="granite", json_notes=True,
                                      prefix="Here is my thought process:",
                                      strip_reasoning=False)
# inkling branch (issue 20): Inkling's typed blocks (a thinking block, then a call block whose
# JSON runs past the hold, 1,024 characters: streamed as written from its "args")
FORMATS["inkling"] = Format("Inkling", "inkling-standin", "inkling-standin", "inkling-standin",
                            "inkling", 200006,
                            '<|end_message|><|message_model|>get_weather'
                            '<|content_invoke_tool_json|>{"name": "get_weather", "args": '
                            '{"city": "Lisbon", "notes": "', '"}}<|end_message|>',
                            prefix="<|content_thinking|>", json_notes=True)
# Muse Glimmer (issue 20; muse_glimmer both), a reasoning message then a
# call message: held for vLLM's message within 1 KB, read message by message past it
FORMATS["muse_glimmer"] = Format("Muse Glimmer", "muse-spark-standin", "muse-spark-standin",
                                 "muse-spark-standin", "muse_glimmer", 200008,
                                 FORMATS["muse"].head, FORMATS["muse"].tail,
                                 prefix=" to=self<|message|>", strip_reasoning=False,
                                 notes_ids=200)  # a call is held whole (as vLLM sends it)

# xlam2 (issue 19): xLAM's list in a fence after the content, held from the fence to the end
# (300 ids of notes: the held text stays within this bench's 4,096-character state)
FORMATS["xlam"] = Format("xLAM", "xlam-llama3.1", "llama3.1", "llama3.1", "xlam", 128009,
                         '\n```json\n[{"name": "get_weather", "arguments": {"city": "Lisbon", '
                         '"notes": "', '"}}]\n```', lead="content", json_notes=True,
                         notes_ids=300)


def _folder(name: str) -> Path:
    """A test model folder by name, or a folder of the repository by its path."""
    return REPO / name if "/" in name else MODELS / name


def models_folder(root: Path, fmt: Format) -> Path:
    """A folder serving the test model with the format's parsers (symlinks)."""
    source = fmt.folder or _folder(fmt.tokenizer_from)
    if not (source / "tokenizer.json").is_file():
        from derender_testing.models import DERIVED
        from derender_testing.tokenizer_variants import gunzip_tokenizer
        if fmt.tokenizer_from in DERIVED:  # a stand-in derived from another test model
            origin, derive = DERIVED[fmt.tokenizer_from]
            derive(MODELS / origin, source)
        else:
            gunzip_tokenizer(source, source)
    folder = Path(tempfile.mkdtemp(dir=root)) / fmt.model  # formats may share a model
    folder.mkdir()
    (folder / "tokenizer.json").symlink_to(source / "tokenizer.json")
    for name in ("tokenizer_config.json", "config.json", "generation_config.json"):
        configs = fmt.folder or _folder(fmt.configs_from)
        if (configs / name).is_file():
            (folder / name).symlink_to(configs / name)
    reasoning = (fmt.reasoning_parser or fmt.parser) if fmt.lead == "reasoning" else None
    (folder / "derender.json").write_text(json.dumps({
        "served_names": [fmt.model], "reasoning_parser": reasoning, "tool_parser": fmt.parser}))
    return folder


@dataclass
class Output:
    ids: list[int]
    prompt: list[int]
    reasoning: str
    arguments: dict[str, Any]
    call_at: int


def build(fmt: Format, tokenizer: Tokenizer) -> Output:
    def encode(text: str) -> list[int]:
        return list(tokenizer.encode(text, add_special_tokens=False).ids)

    notes = tokenizer.decode(real_text_ids(tokenizer, fmt.notes_ids), skip_special_tokens=False)
    written = json.dumps(notes, ensure_ascii=False)[1:-1] if fmt.json_notes else notes
    call = encode(fmt.head + written + fmt.tail)
    if tokenizer.decode(call, skip_special_tokens=False) != fmt.head + written + fmt.tail:
        raise SystemExit(f"{fmt.name}: the call's ids do not decode to its text")
    prefix = encode(fmt.prefix) if fmt.prefix else []
    count = STREAM_IDS - len(call) - len(prefix) - 1
    reasoning = real_text_ids(tokenizer, count + 3000, CORPUS)[3000:]
    ids = [*prefix, *reasoning, *call, fmt.eos]
    if len(ids) != STREAM_IDS:
        raise SystemExit(f"built {len(ids)} ids, not {STREAM_IDS}")
    lead = tokenizer.decode(reasoning, skip_special_tokens=False)
    strip = fmt.lead == "reasoning" and fmt.strip_reasoning
    return Output(ids, encode(fmt.prompt), lead.rstrip() if strip else lead,
                  {"city": "Lisbon", "notes": notes}, len(prefix) + len(reasoning))


def body(fmt: Format, ids: list[int], finish: str | None, prompt: list[int], state: Any
         ) -> dict[str, Any]:
    data: dict[str, Any] = {
        "stream": True, "model": fmt.model,
        "generate_chunk": {"request_id": "e1", "choices": [
            {"index": 0, "token_ids": ids, "finish_reason": finish}]},
        "prompt_token_ids": prompt, "prompt_tokens": len(prompt),
        "chat_request": {"model": fmt.model, "messages": [{"role": "user", "content": "hi"}],
                         "tools": TOOLS, "chat_template_kwargs": dict(fmt.kwargs)}}
    if state is not None:
        data["stream_state"] = state
    return data


def check(name: str, folded: Folded, output: Output, lead: str = "reasoning") -> None:
    calls = [folded.calls[i] for i in sorted(folded.calls)]
    said, other = ((folded.reasoning, folded.content) if lead == "reasoning"
                   else (folded.content, folded.reasoning))
    if (said != output.reasoning or other.strip() or len(calls) != 1
            or calls[0][0] != "get_weather" or json.loads(calls[0][1]) != output.arguments):
        raise SystemExit(f"{name}: the stream is not the reasoning and the call it was built of")


def run(fmt: Format, args: argparse.Namespace, root: Path) -> None:
    folder = models_folder(root, fmt)
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    model = ServedModel(read_model_info(folder), load_vocabulary(folder))
    output = build(fmt, tokenizer)
    load_before = load_line()
    bodies, sizes = [], []
    folded = Folded()
    token = None
    for index, token_id in enumerate(output.ids):
        request = DerenderChatStreamRequest.model_validate(body(
            fmt, [token_id], "stop" if index == len(output.ids) - 1 else None, output.prompt,
            token))
        chunk, token = call(request, model)
        bodies.append(request)
        sizes.append(len(token))
        folded.add(chunk)
    check(f"{fmt.name} stream", folded, output, fmt.lead)
    message = derender_chat(DerenderChatRequest.model_validate({
        "model": fmt.model, "prompt_token_ids": output.prompt,
        "generate_response": {"request_id": "e1", "prompt_token_ids": output.prompt, "choices": [
            {"index": 0, "token_ids": output.ids, "finish_reason": "stop"}]},
        "chat_request": {"model": fmt.model, "messages": [{"role": "user", "content": "hi"}],
                         "tools": TOOLS, "chat_template_kwargs": dict(fmt.kwargs)}}), model,
        16)["choices"][0]["message"]
    whole = Folded(reasoning=message["reasoning"] or "", content=message["content"] or "")
    for i, tool_call in enumerate(message.get("tool_calls") or []):
        whole.calls[i] = [tool_call["function"]["name"], tool_call["function"]["arguments"]]
    check(f"{fmt.name} non-streaming", whole, output, fmt.lead)
    positions = [Position(1, n, n - 1, tokenizer.decode(output.ids[n - 1:n],
                                                        skip_special_tokens=False),
                          bodies[n - 1]) for n in POSITIONS]
    rounds = max(100, int(ROUNDS * args.scale))
    time_passes(positions, model, rounds, args.passes, f"{fmt.name} pass", load_before)
    print(f"{fmt.name} ({fmt.parser} on {fmt.model}): {STREAM_IDS} ids, 1 id per chunk: "
          f"{output.call_at} ids of {fmt.lead}, then a get_weather call of "
          f"{STREAM_IDS - output.call_at - 1} ids and EOS; {rounds} rounds × {args.passes} "
          "passes, medians in µs. Checked: the folded stream and the non-streaming answer give "
          f"the {fmt.lead}, no {'content' if fmt.lead == 'reasoning' else 'reasoning'} and the "
          "one call with the arguments built.")
    print()
    print("| chunk | part of | chunk text | verify+decode µs | derender µs | encode+sign µs "
          "| total µs | total / chunk 10 |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    first = positions[0]
    for p in positions:
        part = fmt.lead if p.chunk <= output.call_at else "tool call (notes value)"
        print(f"| {p.chunk} | {part} | `{p.piece!r}` | {p.med(0) / 1e3:.2f} "
              f"| {p.med(1) / 1e3:.2f} | {p.med(2) / 1e3:.2f} | {p.med(3) / 1e3:.2f} "
              f"| {p.med(3) / first.med(3):.2f}× |")
    stream_summary(positions[-1].med(3) / first.med(3), POSITIONS[-1], TARGET_FLAT, sizes)


def main() -> None:
    run_formats(__doc__.split("\n")[0], list(FORMATS),
                lambda key, args, tmp: run(FORMATS[key], args, tmp))


if __name__ == "__main__":
    main()
