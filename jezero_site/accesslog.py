"""The access log of `jezero serve`: one line per request that a client cannot forge and that
holds no secret. gunicorn's own logger writes the decoded path as it came (a `%0A` in the URL
starts a second, made-up line), the user name of an HTTP Basic header (`%(u)s`: a token sent
that way) and, on request, the query string, the referrer and any header. `AccessLogger`
gives the format only what is safe to write, each text escaped:

- method, path (without the query string), protocol, status, size, duration, the client's
  address and its user agent; nothing else (the user name, the query, the referrer, every
  header and environment atom are `-` whatever the format asks for);
- control characters (C0, DEL, C1, the Unicode line and paragraph separators, the bidi
  controls that reorder what a terminal shows) as `\\n`, `\\r`, `\\t`, `\\xNN` or `\\uNNNN`,
  a backslash as `\\\\` and a double quote as `\\"`: one request is one line, and a quoted
  field ends where it seems to.

`jezero serve` starts gunicorn with `--logger-class jezero_site.accesslog.AccessLogger`, which
writes every access line in `ACCESS_LOG_FORMAT` (gunicorn's `--access-logformat` is not read:
one format, the safe one)."""

from gunicorn import glogging

# Apache's common log shape (address, two dashes, time, request, status, size) with the agent
# and the duration; the request is method, path and protocol, never the raw request line.
ACCESS_LOG_FORMAT = '%(h)s - - %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s "%(a)s" %(M)sms'

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\", '"': '\\"'}
_ESCAPES = {code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7F, 0xA0)]}
_ESCAPES.update({code: f"\\u{code:04x}" for code in (0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A))})
_ESCAPES.update({ord(char): text for char, text in _NAMED.items()})


def escape(text):
    """`text` with every control character, backslash and double quote escaped (see the
    module's docstring): the result holds no line break and no unescaped quote."""
    return str(text).translate(_ESCAPES)


# The atoms a format may use; any other (`u`, `q`, `f`, `r`, `{header}i`, `{name}e`…) is "-".
_SAFE = ("h", "t", "m", "U", "H", "s", "b", "B", "a", "T", "D", "M", "L", "p")


class EscapedAtoms(dict):
    """The safe atoms, escaped; "-" for any other (gunicorn's SafeAtoms escapes only quotes,
    and would escape ours a second time)."""

    def __init__(self, atoms):
        super().__init__({key: escape(atoms[key]) if isinstance(atoms.get(key), str) else atoms.get(key, "-")
                          for key in _SAFE})

    def __missing__(self, key):
        return "-"


class AccessLogger(glogging.Logger):
    """gunicorn's logger with an access line that is safe to write (module docstring)."""

    atoms_wrapper_class = EscapedAtoms

    def access(self, resp, req, environ, request_time):
        if self.access_log_enabled:
            self.access_log.info(ACCESS_LOG_FORMAT, EscapedAtoms(self.atoms(resp, req, environ, request_time)))

    def _get_user(self, environ):
        return None   # never decode an Authorization header, not even to drop what it says

    def info(self, msg, *args, **kwargs):
        # With --reuse-port each worker binds its own socket, so gunicorn's arbiter has no
        # listener of its own to name and logs "Listening at:  (pid)": name the address.
        if msg == "Listening at: %s (%s)" and args and not args[0]:
            args = (", ".join(f"http://{bind}" for bind in self.cfg.bind), *args[1:])
        super().info(msg, *args, **kwargs)
