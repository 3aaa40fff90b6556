"""Differential check of derender's Harmony machine against vLLM 0.33's own ``HarmonyParser``.

Runs in the vLLM peer's virtual environment (it imports vLLM and openai_harmony; derender is
taken from this checkout's ``src``), offline, on the gpt-oss test tokenizer:

    PYTHONPATH=src "$PEER_HOME"/vllm-venv/bin/python scripts/harmony_diff.py [--cases N] [--seed S]

Each case is a random output: Harmony messages with headers drawn from odd and ordinary
fragments (roles, recipients, channels, content types, stray whitespace, invalid bytes),
contents mixing text, single byte tokens and special tokens, junk between messages, cut off
anywhere. vLLM's non-streaming ``parse`` of the ids (the oracle) is compared with derender's
machine fed the same ids whole and in random chunks: reasoning, content and every tool call
(arguments compared as JSON where vLLM re-serialised them). Prints the first differences and
a count; exits 1 on any.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")

from tool_cases.harmony import BYTE_PIECES
from transformers import PreTrainedTokenizerFast
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.parser.harmony import HarmonyParser
from vllm.reasoning.gptoss_reasoning_parser import GptOssReasoningParser
from vllm.tool_parsers.gptoss_tool_parser import GptOssToolParser

from derender.core.parsers.formats import harmony
from derender.core.parsers.tools import ToolCallDelta
from derender.core.registry import load_vocabulary

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "tests" / "models" / "gpt-oss"

HEADERS = ["<|channel|>analysis", "<|channel|>final", "<|channel|>commentary",
           "<|channel|>commentary to=functions.get_weather <|constrain|>json",
           "<|channel|>commentary to=functions.create_note<|constrain|>json",
           " to=functions.get_weather<|channel|>commentary json",
           " to=functions.f<|channel|>commentary <|constrain|>code",
           "<|channel|>analysis to=python code", "<|channel|>commentary to=browser.search",
           " to=container.exec<|channel|>commentary", "<|channel|>final to=assistant",
           " to=lookup", "functions.g", "<|channel|>final extra junk",
           "<|channel|>final a b c", "<|channel|>", "<|channel|> final", "<|channel|>fi<nal",
           "<|channel|>final\u00a0x", "<|channel|>final\x1cx", " to=a\x0bb<|channel|>final",
           "\u3000<|channel|>final\u3000", "<|channel|>final<|channel|>analysis",
           "<|channel|>final<|end|>", "", " ", "to=", "to=functions.", "functions.",
           "<|channel|>commentary to=<|constrain|>json", "<|channel|>commentary  json",
           "<|constrain|>json<|channel|>commentary", " to=functions.f <|constrain|>",
           "<|channel|>commentary <|constrain|>json to=functions.g",
           "<|channel|>final<|channel|>analysis x", "<|channel|>analysis a<|channel|> b c"]
ROLES = ["assistant", "assistant", "assistant", "user", "system", "developer", "tool",
         "Assistant", "functions.f", "bogus", "bogus to=functions.g", ""]
TEXTS = ["Hello", " world", "The user wants the weather.", '{"city": "Paris"}',
         '{"city": "東京", "unit": "c"}', "{bad json", "", "\n", "  ", "café 🌦", "東京",
         "print(2+2)", "<|channel|>", "x<|end|>y"]
SPECIAL = ["<|start|>", "<|end|>", "<|call|>", "<|return|>", "<|message|>", "<|channel|>",
           "<|constrain|>", "<|endoftext|>"]


def byte_tokens(tok: PreTrainedTokenizerFast) -> list[int]:
    """The 256 single-byte tokens (GPT-2 byte-level alphabet, as the recorder spells them)."""
    return [tok.convert_tokens_to_ids(BYTE_PIECES[b]) for b in range(256)]


class Generator:
    def __init__(self, tok: PreTrainedTokenizerFast, rng: random.Random) -> None:
        self.tok, self.rng = tok, rng
        self.bytes = byte_tokens(tok)

    def enc(self, text: str) -> list[int]:
        return list(self.tok.encode(text, add_special_tokens=False))

    def content(self) -> list[int]:
        ids: list[int] = []
        for _ in range(self.rng.randint(0, 4)):
            pick = self.rng.random()
            if pick < 0.6:
                ids += self.enc(self.rng.choice(TEXTS))
            elif pick < 0.85:
                ids += [self.bytes[self.rng.choice([0x80, 0xF0, 0x9F, 0x98, 0xE2, 0x82, 0xAC,
                                                    0xFF, 0xC3, 0xA9, 0xED, 0xA0])]
                        for _ in range(self.rng.randint(1, 3))]
            else:
                ids += self.enc(self.rng.choice(["<|channel|>", "<|endoftext|>",
                                                 "<|start|>", "<|constrain|>"]))
        return ids

    def header(self, first: bool) -> list[int]:
        text = self.rng.choice(HEADERS)
        if not first:
            text = self.rng.choice(ROLES) + text
        ids = self.enc(text)
        if self.rng.random() < 0.05:
            ids.insert(self.rng.randint(0, len(ids)), self.bytes[0x80])
        return ids

    def output(self) -> list[int]:
        if self.rng.random() < 0.1:
            return [self.rng.choice([*self.bytes[:40], *self.enc("".join(SPECIAL))])
                    for _ in range(self.rng.randint(1, 30))]
        ids: list[int] = []
        for n in range(self.rng.randint(1, 4)):
            if n:
                if self.rng.random() < 0.15:
                    ids += self.enc(self.rng.choice(TEXTS + SPECIAL))
                ids += self.enc("<|start|>")
            ids += self.header(first=n == 0)
            if self.rng.random() < 0.9:
                ids += self.enc("<|message|>") + self.content()
                ids += self.enc(self.rng.choice(["<|end|>", "<|end|>", "<|call|>", "<|return|>"]))
        if self.rng.random() < 0.3:
            ids = ids[:self.rng.randint(0, len(ids))]
        if self.rng.random() < 0.2:
            ids.append(self.rng.choice([200002, 200012, 199999]))
        return ids or self.enc("x")


def vllm_parse(tok: PreTrainedTokenizerFast, request: ChatCompletionRequest, ids: list[int]
               ) -> tuple[str, str, list[tuple[str, Any]]]:
    parser = HarmonyParser(tok, None, chat_template_kwargs={})
    reasoning, content, calls = parser.parse("", request, model_output_token_ids=ids)
    return reasoning or "", content or "", [(c.name, c.arguments) for c in calls or []]


def ours(tokens: harmony.Tokens, ids: list[int], cuts: list[int]
         ) -> tuple[str, str, list[tuple[str, Any]]]:
    state = harmony.HarmonyState()
    reasoning, content = "", ""
    deltas: list[ToolCallDelta] = []
    bounds = [0, *cuts, len(ids)]
    for k, (a, b) in enumerate(itertools.pairwise(bounds)):
        delta, state = harmony.feed(state, True, tokens, ids[a:b], final=k == len(bounds) - 2)
        reasoning += delta.reasoning
        content += delta.content
        deltas += delta.calls
    calls: dict[int, list[str]] = {}
    for d in deltas:
        entry = calls.setdefault(d.index, ["", ""])
        entry[0] += d.name or ""
        entry[1] += d.arguments
    return reasoning, content, [(n, a) for _, (n, a) in sorted(calls.items())]


def same_calls(theirs: list[tuple[str, Any]], mine: list[tuple[str, Any]]) -> bool:
    """Equal calls; vLLM re-serialises JSON arguments (json.dumps), derender keeps the text."""
    if len(theirs) != len(mine):
        return False
    for (name_a, args_a), (name_b, args_b) in zip(theirs, mine, strict=True):
        if name_a != name_b:
            return False
        if args_a != args_b:
            try:
                if json.loads(args_a) != json.loads(args_b):
                    return False
            except ValueError:
                return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    HarmonyParser.reasoning_parser_cls = GptOssReasoningParser
    HarmonyParser.tool_parser_cls = GptOssToolParser
    tok = PreTrainedTokenizerFast(tokenizer_file=str(MODEL / "tokenizer.json"))
    tokens = harmony.tokens(load_vocabulary(MODEL))
    request = ChatCompletionRequest(model="gpt-oss", messages=[{"role": "user", "content": "hi"}])
    rng = random.Random(args.seed)
    gen = Generator(tok, rng)
    failures = 0
    for case in range(args.cases):
        ids = gen.output()
        theirs = vllm_parse(tok, request, ids)
        cuts = sorted(rng.sample(range(1, len(ids)), min(len(ids) - 1, rng.randint(0, 6))))
        for split in ([], cuts):
            mine = ours(tokens, ids, split)
            if mine[:2] != theirs[:2] or not same_calls(theirs[2], mine[2]):
                failures += 1
                if failures <= 10:
                    print(f"case {case} ids={ids} cuts={split}\n  vLLM: {theirs!r}\n"
                          f"  ours: {mine!r}")
                break
    print(f"{args.cases} outputs (each whole and in random chunks): {failures} differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
