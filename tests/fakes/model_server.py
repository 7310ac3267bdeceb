"""A scripted model API on 127.0.0.1 for the real `anthropic` and `openai` SDKs to talk to.

Each test scripts the replies in order (`server.script(Reply(...), ...)`) and afterwards
reads `server.requests` to see exactly what the SDK sent: the JSON body (model, system
prompt, messages, tools, tool_choice, max_tokens, response_format) and the headers. A
reply may be delayed to provoke a client timeout; a request with nothing scripted gets
HTTP 418, which the summariser treats as a non-retryable failure, so a test that sends
more calls than it expected fails loudly.
"""

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    status: int = 200
    body: object = None                       # a dict/list is sent as JSON, str/bytes as they are
    headers: dict = field(default_factory=dict)
    delay: float = 0.0                        # seconds to wait before answering
    content_type: str = "application/json"


@dataclass
class Request:
    method: str
    path: str
    headers: dict                             # names in lower case
    body: object                              # the decoded JSON, or the raw text if it is not JSON


class ModelServer:
    def __init__(self):
        self.requests = []
        self._replies = deque()
        self._lock = threading.Lock()
        self._release = threading.Event()     # set on stop: delayed replies give up waiting
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self):
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._release.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def script(self, *replies):
        with self._lock:
            self._replies.extend(replies)

    def _next(self, request):
        with self._lock:
            self.requests.append(request)
            if self._replies:
                return self._replies.popleft()
        return Reply(418, {"error": {"type": "fake_server_error", "message": "no reply scripted"}})


def _handler_for(server):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Headers and body leave at once, not held back by Nagle's algorithm (~40 ms a call).
        disable_nagle_algorithm = True

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length).decode("utf-8")
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw
            headers = {name.lower(): value for name, value in self.headers.items()}
            reply = server._next(Request("POST", self.path, headers, body))
            if reply.delay and server._release.wait(reply.delay):
                return
            payload = reply.body
            if isinstance(payload, (dict, list)):
                payload = json.dumps(payload)
            if isinstance(payload, str):
                payload = payload.encode("utf-8")
            payload = payload or b""
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(payload)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test); nothing to answer

        def log_message(self, format, *args):
            pass

    return Handler


# --- reply bodies in each API's shape ---------------------------------------------------

def anthropic_tool_reply(record, *, input_tokens=1200, output_tokens=250, name="record_summary"):
    """A Messages API answer in which the model called the tool with `record`."""
    return Reply(200, {
        "id": "msg_fake_01", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "tool_use", "id": "toolu_fake_01", "name": name, "input": record}],
        "stop_reason": "tool_use", "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    })


def openai_reply(content, *, prompt_tokens=900, completion_tokens=200):
    """A chat completion whose message content is `content` (a dict is sent as JSON text)."""
    if not isinstance(content, str):
        content = json.dumps(content)
    return Reply(200, {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_790_000_000, "model": "gpt-fake",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content, "refusal": None}}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    })


def api_error(status, error_type, *, headers=None):
    """An error answer in the shape both APIs use."""
    return Reply(status, {"type": "error", "error": {"type": error_type, "message": f"fake {error_type}"}},
                 headers=headers or {})


def responses_reply(text=None, *, call=None, input_tokens=900, output_tokens=120):
    """A streamed OpenAI Responses API answer (`wire_api = "responses"`, as the Codex CLI asks
    for it), as server-sent events: one assistant message holding `text`, or a call of a tool
    (`call`: (name, arguments dict); the name `namespace/tool` for a tool of a namespace, as
    Codex offers an MCP server's tools: `mcp__jezero/search`)."""
    if call is None:
        item = {"type": "message", "role": "assistant", "id": "msg_1", "content": [{"type": "output_text", "text": text}]}
    else:
        namespace, _, name = call[0].rpartition("/")   # "mcp__jezero/search": an MCP server's tool
        item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": name,
                "arguments": json.dumps(call[1]), **({"namespace": namespace} if namespace else {})}
    events = [
        {"type": "response.created", "response": {"id": "resp_1"}},
        {"type": "response.output_item.done", "item": item},
        {"type": "response.completed", "response": {"id": "resp_1", "usage": {
            "input_tokens": input_tokens, "input_tokens_details": None, "output_tokens": output_tokens,
            "output_tokens_details": None, "total_tokens": input_tokens + output_tokens}}},
    ]
    body = "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events)
    return Reply(body=body, content_type="text/event-stream")


def anthropic_stream_reply(text, *, input_tokens=1200, output_tokens=80):
    """A streamed Anthropic Messages API answer (`stream: true`, as Claude Code asks for it): one
    text block holding `text`, as server-sent events."""
    usage = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    events = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                              "model": "claude-test", "content": [], "stop_reason": None,
                                              "stop_sequence": None, "usage": usage}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
         "usage": {"output_tokens": output_tokens}},
        {"type": "message_stop"},
    ]
    body = "".join(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n" for event in events)
    return Reply(body=body, content_type="text/event-stream")
