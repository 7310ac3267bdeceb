"""A real IMAP server for the imap connector's tests: Debian's Dovecot on 127.0.0.1, over TLS.

`Dovecot().start()` writes a throw-away configuration into a fresh folder — IMAPS only on a
free loopback port (`ssl = required`), a self-signed certificate made with the `openssl`
command (for 127.0.0.1 and localhost; the tests pass it as `ca_file`), a passwd-file of
users, Maildir storage, logs to a file — and runs `dovecot -F` on it. Nothing of the
system's Dovecot is used or touched. `mailbox()` hands out one of its empty accounts
(password `PASSWORD`), so tests can share one server (a Dovecot stop takes a second). Mail arrives through IMAP
APPEND with an INTERNALDATE chosen by the test; `Mailbox.recreate()` deletes and recreates a
folder, which gives it a new UIDVALIDITY exactly as a real server does. `dovecot_missing()`
says why the tests cannot run (`./test` installs the `dovecot-imapd` package), or None.

Dovecot refuses to run its login process or to open mail as root, so under root those run
as `dovenull`/`nobody` (the folder is made traversable for them); as another user every
process runs as that user, without chroot.
"""

import grp
import imaplib
import os
import pwd
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
from pathlib import Path

PASSWORD = "correct horse battery staple"
ACCOUNTS = 50


def dovecot_binary():
    return shutil.which("dovecot") or next((p for p in ("/usr/sbin/dovecot", "/usr/local/sbin/dovecot")
                                            if os.access(p, os.X_OK)), None)


def dovecot_missing():
    """Why the IMAP tests cannot run, or None when they can."""
    if dovecot_binary() is None:
        return ("dovecot is not installed: `./test` installs it (apt-get install dovecot-imapd), "
                "or install Debian's dovecot-imapd package yourself")
    if shutil.which("openssl") is None:
        return "the openssl command is missing (it makes the test server's certificate)"
    return None


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Dovecot:
    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="jezero-dovecot-"))
        self.port = free_port()
        self.ca_file = str(self.folder / "cert.pem")
        self.log = self.folder / "dovecot.log"
        self.process = None
        self._accounts = 0

    # -- life cycle

    def start(self, timeout=10):
        self._certificate()
        self._configure()
        with open(self.folder / "stderr.log", "wb") as stderr:
            self.process = subprocess.Popen([dovecot_binary(), "-F", "-c", str(self.folder / "dovecot.conf")],
                                            stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.02)
        problem = self.logs()
        self.stop()
        raise RuntimeError(f"dovecot did not start on 127.0.0.1:{self.port}:\n{problem}")

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)

    def logs(self):
        parts = []
        for name in ("stderr.log", "dovecot.log"):
            path = self.folder / name
            if path.exists():
                parts.append(path.read_text(errors="replace")[-4_000:])
        return "\n".join(parts)

    # -- mail

    def mailbox(self):
        """An unused, empty account on this server (tests share one server: stopping Dovecot
        takes a second)."""
        self._accounts += 1
        if self._accounts > ACCOUNTS:
            raise RuntimeError(f"the test server has only {ACCOUNTS} accounts")
        return Mailbox(self, _account(self._accounts))

    # -- configuration

    def _certificate(self):
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", str(self.folder / "key.pem"), "-out", self.ca_file, "-days", "2", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
            check=True, capture_output=True)

    def _configure(self):
        folder = self.folder
        (folder / "passwd").write_text("".join(f"{_account(n)}:{{PLAIN}}{PASSWORD}\n"
                                               for n in range(1, ACCOUNTS + 1)))
        if os.getuid() == 0:
            # Dovecot will not log in or open mail as root: those run as unprivileged users,
            # who need to reach the mail folder and the certificate key stays root's.
            login_user = "dovenull" if _user_exists("dovenull") else "nobody"
            mail_user = pwd.getpwnam("nobody")
            uid, gid = mail_user.pw_uid, mail_user.pw_gid
            internal_user = "root"
            folder.chmod(0o755)
            chroot = "login"
        else:
            uid, gid = os.getuid(), os.getgid()
            login_user = internal_user = pwd.getpwuid(uid).pw_name
            chroot = ""
        home = folder / "mail"
        home.mkdir()
        os.chown(home, uid, gid)
        group = grp.getgrgid(os.getgid()).gr_name
        (folder / "dovecot.conf").write_text(f"""\
base_dir = {folder}/run
state_dir = {folder}/state
instance_name = jezero-test-{self.port}
log_path = {self.log}
protocols = imap
listen = 127.0.0.1
ssl = required
ssl_cert = <{self.ca_file}
ssl_key = <{folder}/key.pem
default_internal_user = {internal_user}
default_internal_group = {group}
default_login_user = {login_user}
auth_mechanisms = plain
auth_failure_delay = 0
mail_location = maildir:~/Maildir
passdb {{
  driver = passwd-file
  args = scheme=PLAIN username_format=%u {folder}/passwd
}}
userdb {{
  driver = static
  args = uid={uid} gid={gid} home={home}/%u
}}
service imap-login {{
  chroot = {chroot}
  inet_listener imap {{
    port = 0
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {self.port}
    ssl = yes
  }}
}}
service anvil {{
  chroot =
  # no auth penalty: a test of a wrong password must not slow the next login down
  unix_listener anvil-auth-penalty {{
    mode = 0
  }}
}}
""")


class Mailbox:
    """One account on the server: deliver mail, recreate folders, look at flags."""

    def __init__(self, server, user):
        self.server, self.user = server, user

    def client(self):
        """A logged-in imaplib client (use it in a `with` block: it logs out)."""
        context = ssl.create_default_context(cafile=self.server.ca_file)
        imap = imaplib.IMAP4_SSL("127.0.0.1", self.server.port, ssl_context=context, timeout=10)
        try:
            imap.login(self.user, PASSWORD)
        except imaplib.IMAP4.error:
            imap.shutdown()
            raise
        return imap

    def append(self, message, *, when, folder="INBOX"):
        """Deliver `message` (bytes or an EmailMessage) into `folder` with INTERNALDATE `when`."""
        raw = message if isinstance(message, bytes) else message.as_bytes()
        raw = raw.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
        with self.client() as imap:
            if folder != "INBOX":
                imap.create(_quoted(folder))   # NO when it exists already: fine
            typ, data = imap.append(_quoted(folder), None, imaplib.Time2Internaldate(when.timestamp()), raw)
            assert typ == "OK", data

    def recreate(self, folder):
        """Delete and create `folder` again, empty: it gets a new UIDVALIDITY."""
        with self.client() as imap:
            assert imap.delete(_quoted(folder))[0] == "OK"
            assert imap.create(_quoted(folder))[0] == "OK"

    def uidvalidity(self, folder="INBOX"):
        with self.client() as imap:
            imap.select(_quoted(folder), readonly=True)
            return int(imap.response("UIDVALIDITY")[1][-1])

    def flags(self, folder="INBOX"):
        """The flags of every message in `folder`, as IMAP writes them (`\\Seen \\Recent`)."""
        with self.client() as imap:
            imap.select(_quoted(folder), readonly=True)
            typ, data = imap.uid("FETCH", "1:*", "(UID FLAGS)")
            assert typ == "OK", data
            return [line.split(b"FLAGS (", 1)[1].split(b")", 1)[0].decode() for line in data
                    if isinstance(line, bytes) and b"FLAGS (" in line]


def _account(n):
    return f"user{n}@example.org"


def _user_exists(name):
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


def _quoted(folder):
    return '"' + folder.replace("\\", "\\\\").replace('"', '\\"') + '"'
