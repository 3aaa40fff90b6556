"""Record how vLLM 0.33 detokenizes the tekken and tiktoken test folders.

Run in the vLLM peer's environment (vLLM 0.33.0, mistral_common, tiktoken, transformers 5):

    PYTHONPATH=support ~/vllm-peer/vllm-venv/bin/python scripts/byte_vocab_fixtures.py \
        tests/fixtures/byte-vocab

(``PYTHONPATH=support``: the peer's environment has no derender; ``byte_vocab_models`` needs
nothing but the standard library.)

For each folder of ``derender_testing/byte_vocab_models.py`` (built under a temporary
folder), random cases — a prompt, output ids, ``skip_special_tokens`` — are fed one id at a
time to the incremental detokenizer vLLM's engine picks for the tokenizer
(``IncrementalDetokenizer.from_new_request``: ``SlowIncrementalDetokenizer`` for both), and the
deltas are written as ``<model>.json``; then (issue 24) cases of the same kinds with
``spaces_between_special_tokens`` false as ``<model>-no-spaces.json``.

- tekken: the tokenizer is vLLM's own ``MistralTokenizer.from_pretrained(folder)``, as
  ``--tokenizer-mode mistral`` loads it.
- tiktoken: Kimi's ``TikTokenTokenizer`` is remote code that cannot be fetched here, so
  ``KimiTikToken`` below restates what of it decoding touches (its ``__init__``'s ids and special
  tokens, ``_convert_id_to_token``, ``convert_tokens_to_string``, ``decode``) on transformers'
  ``PythonBackend``; the detokenization around it (``convert_ids_to_tokens``, added tokens,
  ``skip_special_tokens``, ``spaces_between_special_tokens``) is transformers' and vLLM's own.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import tiktoken
from tiktoken.load import load_tiktoken_bpe
from transformers import PythonBackend
from transformers.convert_slow_tokenizer import bytes_to_unicode
from vllm import SamplingParams
from vllm.tokenizers.mistral import MistralTokenizer
from vllm.v1.engine.detokenizer import IncrementalDetokenizer

from derender_testing.byte_vocab_models import BYTE_VOCAB_MODELS, build

TEXTS = [
    "Hello world! How are you today?",
    "Grüße aus München — naïve café, façade. Größe ≠ size.",
    "日本語のテキストと中文文本，한국어 문장, हिन्दी वाक्य, العربية, ไทย",
    "Emoji: 🫠👍🏽👨‍👩‍👧 🇯🇵 and 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "def f(x):\n    return {'a': [1, 2, 3]}  # comment\n\tprint(x)",
    "  leading and trailing spaces   ",
]
CASES_PER_MODEL = 240
NO_SPACES_CASES = 120


class KimiTikToken(PythonBackend):  # type: ignore[misc]
    """Kimi's ``TikTokenTokenizer`` as far as decoding goes (see the module docstring)."""

    vocab_files_names = {"vocab_file": "tiktoken.model"}  # noqa: RUF012 - as in Kimi
    model_input_names = ["input_ids", "attention_mask"]  # noqa: RUF012
    num_reserved_special_tokens = 256

    def __init__(self, vocab_file: str, bos_token: str = "[BOS]", eos_token: str = "[EOS]",
                 unk_token: str | None = None, pad_token: str | None = None,
                 additional_special_tokens: list[str] | None = None,
                 added_tokens_decoder: dict[int, Any] | None = None, **kwargs: Any) -> None:
        names = {int(i): t.content for i, t in (added_tokens_decoder or {}).items()}
        ranks = load_tiktoken_bpe(vocab_file)
        base = len(ranks)
        self.special_tokens = {names.get(i, f"<|reserved_token_{i}|>"): i
                               for i in range(base, base + self.num_reserved_special_tokens + 2)}
        self.model = tiktoken.Encoding(name="kimi", pat_str=r"\S+|\s+", mergeable_ranks=ranks,
                                       special_tokens=self.special_tokens)
        self.n_words = self.model.n_vocab
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
        self.decoder = {
            i: "".join(self.byte_encoder[ord(c)]
                       for c in self.model.decode_single_token_bytes(i).decode("latin-1"))
            for i in range(self.n_words)}
        self.encoder = {v: k for k, v in self.decoder.items()}
        super().__init__(bos_token=bos_token, eos_token=eos_token, unk_token=unk_token,
                         pad_token=pad_token,
                         additional_special_tokens=additional_special_tokens, **kwargs)

    @property
    def vocab_size(self) -> int:
        return self.n_words

    def get_vocab(self) -> dict[str, int]:
        return self.encoder

    def _convert_token_to_id(self, token: str) -> int:
        return self.encoder.get(token, self.special_tokens[str(self.unk_token)])

    def _convert_id_to_token(self, index: int) -> str:
        return self.decoder[index]

    def convert_tokens_to_string(self, tokens: list[str]) -> str:
        return bytearray(self.byte_decoder[c] for c in "".join(tokens)).decode("utf-8", "replace")

    def decode(self, token_ids: Any, **kwargs: Any) -> str:
        if kwargs:
            return str(super().decode(token_ids, **kwargs))
        return self.model.decode([token_ids] if isinstance(token_ids, int) else token_ids)


def load(name: str, folder: Path) -> Any:
    if name == "kimi-tiktoken":
        return KimiTikToken.from_pretrained(str(folder))
    return MistralTokenizer.from_pretrained(str(folder))


def encode(name: str, tokenizer: Any, text: str) -> list[int]:
    if name == "kimi-tiktoken":
        return list(tokenizer.model.encode(text, disallowed_special=()))
    return list(tokenizer.encode(text, add_special_tokens=False))


def run(tokenizer: Any, prompt: list[int], ids: list[int], skip: bool,
        spaces: bool = True) -> list[str]:
    params = SamplingParams(skip_special_tokens=skip, max_tokens=len(ids) + 1,
                            spaces_between_special_tokens=spaces)
    request = SimpleNamespace(sampling_params=params, prompt_token_ids=prompt,
                              prompt_embeds=None, request_id="fixture")
    detokenizer = IncrementalDetokenizer.from_new_request(tokenizer, request)
    deltas = []
    for token in ids:
        detokenizer.update([token], False)
        deltas.append(detokenizer.get_next_output_text(False, True))
    return deltas


def cases(name: str, tokenizer: Any, rng: random.Random, spaces: bool = True,
          count: int = CASES_PER_MODEL) -> list[dict[str, Any]]:
    size = len(tokenizer)
    specials = sorted(set(tokenizer.all_special_ids)) if name == "kimi-tiktoken" \
        else list(range(40))
    first_regular = 0 if name == "kimi-tiktoken" else 1000
    encoded = [encode(name, tokenizer, text) for text in TEXTS]
    bytes_ids = list(range(first_regular + 128, first_regular + 256))  # lone UTF-8 bytes
    out = []
    for n in range(count):
        kind = n % 4
        if kind == 0:  # real text, a slice of it
            ids = rng.choice(encoded)
            start = rng.randrange(len(ids))
            ids = ids[start:start + rng.randrange(1, 40)]
        elif kind == 1:  # random ordinary ids
            ids = [rng.randrange(first_regular, size) for _ in range(rng.randrange(1, 30))]
        elif kind == 2:  # partial characters: lone bytes among text
            ids = [rng.choice(bytes_ids) if rng.random() < 0.5 else rng.randrange(size)
                   for _ in range(rng.randrange(1, 30))]
        else:  # text with special tokens between
            ids = []
            for token in rng.choice(encoded)[:30]:
                ids.append(token)
                if rng.random() < 0.25:
                    ids.append(rng.choice(specials))
        prompt = [rng.choice([rng.randrange(size), rng.choice(specials), rng.choice(bytes_ids)])
                  for _ in range(rng.randrange(0, 10))]
        skip = n % 3 != 0
        deltas = run(tokenizer, prompt, ids, skip, spaces)
        case = {"prompt": prompt, "ids": ids, "skip_special_tokens": skip,
                "deltas": deltas, "text": "".join(deltas)}
        if not spaces:
            case["spaces_between_special_tokens"] = False
        out.append(case)
    return out


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in BYTE_VOCAB_MODELS:
            tokenizer = load(name, build(name, Path(tmp)))
            rng = random.Random(f"issue14-{name}")  # the seed the recorded fixtures were made with
            record = {"model": name, "recorded_with": "vLLM 0.33.0 SlowIncrementalDetokenizer",
                      "tokenizer": type(tokenizer).__name__, "vocab_size": len(tokenizer),
                      "all_special_ids": sorted(set(tokenizer.all_special_ids)),
                      "cases": cases(name, tokenizer, rng)}
            (out / f"{name}.json").write_text(
                json.dumps(record, ensure_ascii=False, indent=None) + "\n", encoding="utf-8")
            print(name, len(record["cases"]), "cases")
            # issue 24: the same kinds of cases with spaces_between_special_tokens false
            rng = random.Random(f"issue24-{name}")
            record = {**record, "cases": cases(name, tokenizer, rng, spaces=False,
                                               count=NO_SPACES_CASES)}
            (out / f"{name}-no-spaces.json").write_text(
                json.dumps(record, ensure_ascii=False, indent=None) + "\n", encoding="utf-8")
            print(name, len(record["cases"]), "cases without spaces between special tokens")


if __name__ == "__main__":
    main()
