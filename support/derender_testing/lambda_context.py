"""A stand-in for the context object AWS Lambda passes a handler (tests and benchmarks)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FakeLambdaContext:
    """The attributes of Lambda's context object that Mangum's ``LambdaContext`` names."""

    function_name: str = "derender-chat-completions"
    function_version: str = "$LATEST"
    invoked_function_arn: str = (
        "arn:aws:lambda:us-east-1:123456789012:function:derender-chat-completions")
    memory_limit_in_mb: int = 1024
    aws_request_id: str = "52fdfc07-2182-454f-963f-5f0f9a621d72"
    log_group_name: str = "/aws/lambda/derender-chat-completions"
    log_stream_name: str = "2026/11/29/[$LATEST]0123456789abcdef0123456789abcdef"
    identity: None = None
    client_context: None = None

    def get_remaining_time_in_millis(self) -> int:
        return 29_000
