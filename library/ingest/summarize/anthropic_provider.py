"""The Anthropic Messages API through the official `anthropic` SDK (docs/design.md "The summariser").

The record schema is offered as one tool, `record_summary`, and the model is forced to
call it; its input is the answer. The SDK's retries are off (`max_retries=0`) so that
`retry.call_with_retries` is the only policy, and its timeout is `timeout_seconds`.
"""

import json
import random
import time

import anthropic

from library.ingest.summarize.base import Summarizer, SummaryError
from library.ingest.summarize.prompt import SYSTEM_PROMPT, user_message
from library.ingest.summarize.retry import MAX_ATTEMPTS, api_error, call_with_retries
from library.ingest.summarize.schema import RECORD_SCHEMA, TOOL_NAME, summary_of

DEFAULT_BASE_URL = "https://api.anthropic.com"
MAX_TOKENS = 2048
TOOL = {
    "name": TOOL_NAME,
    "description": "Record the structured summary of the document.",
    "input_schema": RECORD_SCHEMA,
}


class AnthropicSummarizer(Summarizer):
    def __init__(self, *, model, api_key, base_url=None, timeout_seconds=120, output_language=None,
                 known_projects=(), sleep=time.sleep, uniform=random.uniform, max_attempts=MAX_ATTEMPTS):
        self.name = f"anthropic:{model}"
        self._model = model
        self._language = output_language
        self._projects = tuple(known_projects)
        self._retry = {"sleep": sleep, "uniform": uniform, "label": self.name, "max_attempts": max_attempts}
        # An explicit base URL, so that ANTHROPIC_BASE_URL in the environment cannot
        # redirect the documents somewhere the configuration does not say.
        self._client = anthropic.Anthropic(api_key=api_key, base_url=base_url or DEFAULT_BASE_URL,
                                           timeout=float(timeout_seconds), max_retries=0)

    def summarize(self, request):
        content = user_message(request, output_language=self._language, known_projects=self._projects)

        def call():
            try:
                return self._client.messages.create(
                    model=self._model,
                    max_tokens=MAX_TOKENS,
                    system=SYSTEM_PROMPT,
                    messages=[{"role": "user", "content": content}],
                    tools=[TOOL],
                    tool_choice={"type": "tool", "name": TOOL_NAME},
                )
            except anthropic.APIError as exc:
                raise api_error(exc, anthropic, "anthropic") from None
            except json.JSONDecodeError:
                raise SummaryError("anthropic: the response body is not JSON") from None

        message, attempts = call_with_retries(call, **self._retry)
        input_tokens, output_tokens = _usage(message)
        return summary_of(lambda: _tool_input(message), summarizer=self.name, attempts=attempts,
                          input_tokens=input_tokens, output_tokens=output_tokens)

    def close(self):
        self._client.close()


def _tool_input(message):
    """The `record_summary` call's input; failing that, a JSON object in a text block."""
    blocks = getattr(message, "content", None)
    if not isinstance(blocks, list):
        raise SummaryError("anthropic: the response is not a message")
    texts = []
    for block in blocks:
        if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == TOOL_NAME:
            return block.input
        if getattr(block, "type", None) == "text":
            texts.append(block.text)
    if texts:
        return "\n".join(texts)
    raise SummaryError("anthropic: the answer did not call record_summary")


def _usage(message):
    usage = getattr(message, "usage", None)
    if usage is None:
        return 0, 0
    input_tokens = sum(getattr(usage, name, None) or 0
                       for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    return input_tokens, getattr(usage, "output_tokens", None) or 0
