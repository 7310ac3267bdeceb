"""Any OpenAI-compatible chat completions endpoint through the official `openai` SDK (docs/design.md "The summariser").

OpenAI itself, OpenRouter, or a local server (Ollama, vLLM, llama.cpp) at `base_url`. The
record schema goes in `response_format` as a strict `json_schema`; with
`response_format = "json_object"` (for servers without structured outputs) the schema is
described in the system prompt instead. The SDK's retries are off (`max_retries=0`) so
that `retry.call_with_retries` is the only policy.
"""

import json
import random
import time

import openai

from library.ingest.summarize.base import Summarizer, SummaryError
from library.ingest.summarize.prompt import JSON_INSTRUCTIONS, SYSTEM_PROMPT, user_message
from library.ingest.summarize.retry import MAX_ATTEMPTS, api_error, call_with_retries
from library.ingest.summarize.schema import RECORD_SCHEMA, TOOL_NAME, summary_of

DEFAULT_BASE_URL = "https://api.openai.com/v1"
JSON_SCHEMA_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": TOOL_NAME, "strict": True, "schema": RECORD_SCHEMA},
}
JSON_OBJECT_FORMAT = {"type": "json_object"}


class OpenAISummarizer(Summarizer):
    def __init__(self, *, model, api_key, base_url=None, timeout_seconds=120, response_format="json_schema",
                 output_language=None, known_projects=(), sleep=time.sleep, uniform=random.uniform,
                 max_attempts=MAX_ATTEMPTS):
        self.name = f"openai:{model}"
        self._model = model
        self._language = output_language
        self._projects = tuple(known_projects)
        self._retry = {"sleep": sleep, "uniform": uniform, "label": self.name, "max_attempts": max_attempts}
        if response_format == "json_object":
            self._format, self._system = JSON_OBJECT_FORMAT, f"{SYSTEM_PROMPT}\n\n{JSON_INSTRUCTIONS}"
        else:
            self._format, self._system = JSON_SCHEMA_FORMAT, SYSTEM_PROMPT
        # An explicit base URL, so that OPENAI_BASE_URL in the environment cannot redirect
        # the documents somewhere the configuration does not say.
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url or DEFAULT_BASE_URL,
                                     timeout=float(timeout_seconds), max_retries=0)

    def summarize(self, request):
        content = user_message(request, output_language=self._language, known_projects=self._projects)

        def call():
            try:
                return self._client.chat.completions.create(
                    model=self._model,
                    messages=[{"role": "system", "content": self._system}, {"role": "user", "content": content}],
                    response_format=self._format,
                )
            except openai.APIError as exc:
                raise api_error(exc, openai, "openai") from None
            except json.JSONDecodeError:
                raise SummaryError("openai: the response body is not JSON") from None

        completion, attempts = call_with_retries(call, **self._retry)
        input_tokens, output_tokens = _usage(completion)
        return summary_of(lambda: _answer_text(completion), summarizer=self.name, attempts=attempts,
                          input_tokens=input_tokens, output_tokens=output_tokens)

    def close(self):
        self._client.close()


def _answer_text(completion):
    choices = getattr(completion, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise SummaryError("openai: the response has no choices")
    message = getattr(choices[0], "message", None)
    text = getattr(message, "content", None)
    if not isinstance(text, str) or not text.strip():
        reason = "the model refused" if getattr(message, "refusal", None) else "the answer is empty"
        raise SummaryError(f"openai: {reason}")
    return text


def _usage(completion):
    usage = getattr(completion, "usage", None)
    if usage is None:
        return 0, 0
    return getattr(usage, "prompt_tokens", None) or 0, getattr(usage, "completion_tokens", None) or 0
