"""What vLLM 0.33's own response models do to derender's ``stream_state`` (issue 21, §1).

Run with the peer kit's interpreter (vLLM 0.33.0 installed there)::

    "$PEER_HOME"/vllm-venv/bin/python scripts/check_vllm_state_models.py

Prints the dump of our object form after ``DerenderChatStreamResponse`` validation (all
fields, and with ``exclude_unset``), what becomes of unknown fields, whether the bare string
form validates, and whether the dumped state validates back into ``DerenderChatStreamRequest``.
"""

from __future__ import annotations

import json

from vllm.entrypoints.scale_out.token_in_token_out.protocol import (  # type: ignore[import-not-found]
    DerenderChatStreamRequest,
    DerenderChatStreamResponse,
)

CHUNK = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "qwen3",
         "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"},
                      "logprobs": None, "finish_reason": None}]}
OURS = {"prev_tokens": ["derender:AQJrMdXlvaTXTjrf3Ou72AYBAQHrSwEB60sAAQAFAQAA1KYRkbzg1denJ8E8"]}


def main() -> None:
    answer = DerenderChatStreamResponse.model_validate({"chunk": CHUNK, "stream_state": OURS})
    dumped = answer.model_dump(mode="json")["stream_state"]
    print("dump:", json.dumps(dumped))
    print("dump, exclude_unset:",
          json.dumps(answer.model_dump(mode="json", exclude_unset=True)["stream_state"]))
    unknown = DerenderChatStreamResponse.model_validate(
        {"chunk": CHUNK, "stream_state": {"token": "abc"}})
    print("unknown fields:", json.dumps(unknown.model_dump(mode="json")["stream_state"]))
    try:
        DerenderChatStreamResponse.model_validate({"chunk": CHUNK, "stream_state": "AQJr"})
        print("string form: accepted")
    except ValueError as error:
        print("string form: refused:", str(error).splitlines()[2].strip())
    request = DerenderChatStreamRequest.model_validate({
        "stream": True, "stream_state": dumped,
        "generate_chunk": {"request_id": "r", "choices": [{"index": 0, "token_ids": [1]}]}})
    print("back into the request:", request.stream_state.prev_tokens == OURS["prev_tokens"])


if __name__ == "__main__":
    main()
