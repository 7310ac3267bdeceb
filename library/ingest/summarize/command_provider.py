"""A local agent CLI as the summariser (`claude -p`, `codex exec`, …): no API key of ours.

`summarizer.command` is the argument list; `{model}` in any argument becomes
`summarizer.model`. The full prompt (system prompt, the schema as JSON instructions, the
user message) goes to the process on stdin and the record is the JSON object on its
stdout, with or without surrounding prose or a ```json fence. Claude Code's
`--output-format json` envelope (`{"result": "...", "usage": {...}}`) is unwrapped and its
token counts kept; otherwise tokens are 0.

Failures are not retried here: an agent CLI retries its own API calls, and a timeout or a
non-zero exit is rarely cured by running it again at once. The next run tries again.
The process gets its own session so that a timeout kills it with everything it started.
"""

import contextlib
import os
import signal
import subprocess

from library.ingest.summarize.base import Summarizer, SummaryError
from library.ingest.summarize.prompt import full_prompt
from library.ingest.summarize.schema import extract_json_object, summary_of


class CommandSummarizer(Summarizer):
    def __init__(self, *, model, command, timeout_seconds=120, output_language=None, known_projects=(), env=None):
        self.name = f"command:{model}"
        self._args = [arg.replace("{model}", model) for arg in command]
        self._timeout = timeout_seconds
        self._language = output_language
        self._projects = tuple(known_projects)
        self._env = dict(env) if env is not None else None

    def summarize(self, request):
        prompt = full_prompt(request, output_language=self._language, known_projects=self._projects)
        stdout = self._run(prompt)
        answer = extract_json_object(stdout)
        input_tokens = output_tokens = 0
        if isinstance(answer, dict) and "title" not in answer and isinstance(answer.get("result"), str):
            input_tokens, output_tokens = _envelope_usage(answer.get("usage"))
            answer = answer["result"]
        return summary_of(lambda: answer, summarizer=self.name, attempts=1, input_tokens=input_tokens,
                          output_tokens=output_tokens)

    def _run(self, prompt):
        program = os.path.basename(self._args[0])
        try:
            process = subprocess.Popen(
                self._args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=self._env, start_new_session=True, text=True, encoding="utf-8", errors="replace",
            )
        except OSError as exc:
            raise SummaryError(f"command: cannot start {program} ({exc.strerror})") from None
        with process:  # closes the pipes and reaps the process, whatever happens
            try:
                stdout, _stderr = process.communicate(prompt, timeout=self._timeout)
            except subprocess.TimeoutExpired:
                _kill_group(process)
                process.communicate()
                raise SummaryError(f"command: {program} timed out after {self._timeout} s and was stopped") from None
            except BaseException:
                # Its own session keeps Ctrl-C from reaching the agent, so stop it here.
                _kill_group(process)
                raise
        # stderr is not put in the message: an agent CLI may echo its input there.
        if process.returncode != 0:
            raise SummaryError(f"command: {program} exited with status {process.returncode}")
        return stdout


def _kill_group(process):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


def _envelope_usage(usage):
    if not isinstance(usage, dict):
        return 0, 0

    def number(name):
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    inputs = number("input_tokens") + number("cache_creation_input_tokens") + number("cache_read_input_tokens")
    return inputs, number("output_tokens")
