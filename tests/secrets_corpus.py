"""The planted-secret corpus (docs/design.md "Secrets never land"), shared by the redaction tests and bench/redact.py.

`planted(seed)` makes ≥ 300 secrets of ≥ 30 kinds (cloud keys, VCS tokens, chat and bot
tokens, payment, mail and SMS providers, AI providers, registries, database URLs with awkward
passwords, private keys, JWTs, generic password/token/secret/api_key assignments), each in a
realistic context (env, YAML, JSON, TOML, HTTP header, CLI flag, Python, URL, prose, and the
tail of a tool line longer than the old 300-character cut). `benign(seed)` makes the
high-entropy strings people keep and no redactor should touch (git SHAs, UUIDs, base64
images, integrity hashes, docker digests, public keys, CSRF tokens in pasted HTML, the AWS
documentation example key, `PUBLIC_KEY=<base64>`, …). Every value is random, drawn from a
seeded generator, so each run plants new secrets of the same shapes and a failure names its
seed. `leaked(sample, output)` says whether any part of a secret got through.

Token prefixes are split in this file ("gh" + "p_") so that no secret scanner or push
protection flags it. Standard library only: bench/ imports it without Django.
"""

import base64
import hashlib
import json
import random
import re
import string
import uuid
from collections import Counter
from dataclasses import dataclass

UPPER, LOWER, DIGITS = string.ascii_uppercase, string.ascii_lowercase, string.digits
LETTERS = UPPER + LOWER
ALNUM = UPPER + LOWER + DIGITS
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
WINDOW = 6              # a secret leaks when any 6 characters of its random part survive
_MARKER = re.compile(r"\[REDACTED:[^\]\n]*\]")
DISPLAY_CUT = 300       # where connectors used to cut a tool line's detail, before redaction

# Every context a sample may stand in (the report counts them).
CONTEXTS = ("env", "yaml", "json", "toml", "header", "cli", "python", "url", "prose", "tool-tail")


@dataclass(frozen=True)
class Planted:
    """One planted secret: `text` holds `secret`, whose first `public` characters are a
    well-known prefix (`sk_live_`, `-----BEGIN …-----`) that may be kept."""

    kind: str
    family: str
    context: str
    text: str
    secret: str
    public: int = 0

    @property
    def core(self):
        return self.secret[self.public:]


@dataclass(frozen=True)
class Benign:
    kind: str
    text: str


def leaked(sample, output):
    """Whether any WINDOW characters of the secret's random part are still in `output`
    (markers left out): a secret cut in half or redacted from its middle on has leaked."""
    core = sample.core
    width = min(WINDOW, len(core))
    out = _MARKER.sub("\0", output)
    return any(core[i:i + width] in out for i in range(len(core) - width + 1))


def _windows_clear(sample):
    """The text outside the secret shares no window with it: `leaked` then means the secret."""
    rest = sample.text.replace(sample.secret, "\0")
    return not leaked(Planted(sample.kind, sample.family, sample.context, rest, sample.secret, sample.public), rest)


class _Random:
    def __init__(self, seed):
        self.rng = random.Random(seed)

    def choice(self, seq):
        return self.rng.choice(seq)

    def body(self, n, alphabet=ALNUM):
        """n characters of `alphabet`, with an upper, a lower and a digit when it has them
        (random tokens with capitals: the shape the old "two capitalised words" test missed)."""
        chars = [self.rng.choice(alphabet) for _ in range(n)]
        picks = [cls for cls in (UPPER, LOWER, DIGITS) if any(c in alphabet for c in cls)]
        for i, index in enumerate(self.rng.sample(range(n), min(len(picks), n))):
            chars[index] = self.rng.choice([c for c in picks[i] if c in alphabet])
        return "".join(chars)

    def word(self):
        return self.choice(_WORDS).capitalize()

    def password(self, style=None):
        """A password as people choose them: `SummerBreeze2024`, random with symbols, `hunter2!`."""
        style = style or self.choice(("wordword", "random", "symbols", "short"))
        if style == "wordword":
            return self.word() + self.word() + str(self.rng.randint(1990, 2031)) + self.choice(("", "!", "#", "?"))
        if style == "random":
            return self.body(self.rng.randint(16, 20))
        if style == "symbols":  # not starting with "-", which a command line would take for a flag
            return self.body(1, LETTERS) + self.body(self.rng.randint(9, 15), ALNUM + "!#%^*-_=+.~")
        return self.choice(_WORDS) + str(self.rng.randint(1, 99)) + self.choice("!#$%&*")

    def awkward_password(self, n):
        """A URL password with characters that end a naive match: the n-th of # ? / ' space ( ) [ ] …"""
        awkward = _AWKWARD[n % len(_AWKWARD)]
        left, right = self.body(self.rng.randint(4, 8)), self.body(self.rng.randint(3, 7))
        return left + awkward + right + self.choice(("", "!"))

    def hexs(self, n):
        return "".join(self.rng.choice(HEX) for _ in range(n))

    def b64(self, nbytes, alphabet="std"):
        data = self.rng.randbytes(nbytes)
        out = base64.b64encode(data) if alphabet == "std" else base64.urlsafe_b64encode(data)
        return out.decode()

    def uuid(self):
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def jwt(self):
        def part(data):
            return base64.urlsafe_b64encode(json.dumps(data, separators=(",", ":")).encode()).rstrip(b"=").decode()
        claims = {"sub": self.uuid(), "iat": self.rng.randint(1_600_000_000, 1_800_000_000), "role": "service"}
        return part({"alg": self.choice(("HS256", "RS256")), "typ": "JWT"}) + "." + part(claims) + "." + \
            self.body(43, B64URL)

    def pem(self, label, lines=None, escaped=False):
        lines = lines or self.rng.randint(5, 25)
        rows = [self.b64(48) for _ in range(lines)] + [self.b64(self.rng.randint(10, 40))]
        block = "\n".join([f"-----BEGIN {label}-----", *rows, f"-----END {label}-----"])
        return block.replace("\n", "\\n") if escaped else block


_AWKWARD = ("#", "?", "/", "'", " ", "[", "]", "(", ")", "#?", "/'", "@")
_WORDS = ("summer", "breeze", "winter", "falcon", "orange", "castle", "river", "silver", "thunder", "garden",
          "marble", "rocket", "maple", "ocean", "copper", "shadow", "harbor", "violet", "tiger", "meadow",
          "crystal", "dragon", "sunset", "forest", "planet", "velvet", "canyon", "pepper", "lemon", "cobalt")


# --- the kinds: how each secret looks and which names people give it ------------------------------

@dataclass(frozen=True)
class Kind:
    kind: str
    family: str
    make: object                # _Random -> (secret, public prefix length)
    names: tuple                # ENV_NAME style names it is stored under
    bare: bool = True           # its shape alone identifies it (prose, tool lines, URLs without a name)
    count: int = 9


def _prefixed(prefix, n, alphabet=ALNUM):
    return lambda r: (prefix + r.body(n, alphabet), len(prefix))


def _aws_secret(r):
    return r.body(40, B64), 0


def _azure_storage(r):
    return r.b64(64), 0


def _slack_bot(r):
    return "xo" + "xb-" + r.body(12, DIGITS) + "-" + r.body(13, DIGITS) + "-" + r.body(24), 5


def _slack_user(r):
    return "xo" + "xp-" + r.body(12, DIGITS) + "-" + r.body(12, DIGITS) + "-" + r.body(13, DIGITS) + "-" + r.hexs(32), 5


def _discord_bot(r):
    first = base64.b64encode(str(r.rng.randint(10**17, 10**19)).encode()).decode().rstrip("=")
    return first + "." + r.body(6, B64URL) + "." + r.body(r.choice((27, 38)), B64URL), 0


def _discord_webhook(r):
    return str(r.rng.randint(10**17, 10**19)) + "/" + r.body(68, B64URL), 0


def _telegram(r):
    return str(r.rng.randint(10**8, 10**10)) + ":AA" + r.body(33, B64URL), 0


def _twilio_key(r):
    return "S" + "K" + r.hexs(32), 2


def _sendgrid(r):
    return "S" + "G." + r.body(22, B64URL) + "." + r.body(43, B64URL), 3


def _mailgun(r):
    form = r.rng.random()
    if form < 1 / 3:   # the legacy key as Mailgun issues it: 32 hex, no letter past f
        return "ke" + "y-" + r.hexs(32), 4
    if form < 2 / 3:
        return "ke" + "y-" + r.body(32, LOWER + DIGITS), 4
    return r.hexs(32) + "-" + r.hexs(8) + "-" + r.hexs(8), 0


def _mailchimp(r):
    return r.hexs(32) + "-us" + str(r.rng.randint(1, 21)), 0


def _square(r):
    if r.rng.random() < 0.5:
        return "EA" + "AA" + r.body(60, B64URL), 4
    return "sq0" + "csp-" + r.body(43, B64URL), 7


def _braintree(r):
    return "access_token$production$" + r.body(16, LOWER + DIGITS) + "$" + r.hexs(32), 24


def _stripe(r):
    prefix = r.choice(("sk" + "_live_", "rk" + "_live_", "sk" + "_test_", "wh" + "sec_"))
    return prefix + r.body(r.choice((24, 32, 99)) if prefix.startswith(("s", "r")) else 32), len(prefix)


def _openai(r):
    if r.rng.random() < 0.5:
        return "sk-" + "proj-" + r.body(74, B64URL) + "T3Blbk" + "FJ" + r.body(74, B64URL), 8
    return "sk-" + r.body(20) + "T3Blbk" + "FJ" + r.body(20), 3


def _github(r):
    prefix = "gh" + r.choice("pousr") + "_"
    return prefix + r.body(36), 4


def _github_fine(r):
    return "github" + "_pat_" + "11" + r.body(20, UPPER + DIGITS) + "_" + r.body(59), 11


def _gitlab(r):
    prefix = "gl" + r.choice(("pat-", "ptt-", "rt-", "dt-"))
    return prefix + r.body(20, B64URL), len(prefix)


def _pypi(r):
    return "py" + "pi-AgEIcHlwaS5vcmc" + r.body(140, B64URL), 18


def _google_oauth_secret(r):
    return "GOC" + "SPX-" + r.body(28, B64URL), 7


def _azure_client_secret(r):
    return r.body(3, ALNUM) + str(r.rng.randint(0, 9)) + "Q~" + r.body(34, ALNUM + "_~.-"), 0


def _databricks(r):
    return "da" + "pi" + r.hexs(32), 4


def _age(r):
    return "AGE-SECRET" + "-KEY-1" + r.body(58, "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"), 16


def _vault(r):
    return "hv" + "s." + r.body(90, B64URL), 4


def _grafana(r):
    return "gl" + "sa_" + r.body(32) + "_" + r.hexs(8), 5


def _jwt(r):
    return r.jwt(), 0


def _private_key(r):
    label = r.choice(("RSA PRIVATE KEY", "OPENSSH PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY",
                      "ENCRYPTED PRIVATE KEY"))
    return r.pem(label), 0


KINDS = (
    # cloud
    Kind("aws-access-key-id", "cloud", _prefixed("AK" + "IA", 16, UPPER + "234567"), ("AWS_ACCESS_KEY_ID",)),
    Kind("aws-secret-key", "cloud", _aws_secret, ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"), bare=False),
    Kind("google-api-key", "cloud", _prefixed("AI" + "za", 35, B64URL), ("GOOGLE_API_KEY", "GEMINI_API_KEY")),
    Kind("google-oauth-secret", "cloud", _google_oauth_secret, ("GOOGLE_CLIENT_SECRET",)),
    Kind("azure-storage-key", "cloud", _azure_storage, ("AZURE_STORAGE_KEY", "AccountKey"), bare=False),
    Kind("azure-client-secret", "cloud", _azure_client_secret, ("AZURE_CLIENT_SECRET",)),
    Kind("digitalocean-token", "cloud", _prefixed("do" + "p_v1_", 64, HEX), ("DIGITALOCEAN_TOKEN",)),
    Kind("databricks-token", "cloud", _databricks, ("DATABRICKS_TOKEN",)),
    Kind("vault-token", "cloud", _vault, ("VAULT_TOKEN",)),
    Kind("heroku-api-key", "cloud", lambda r: (r.uuid(), 0), ("HEROKU_API_KEY",), bare=False),
    # version control and registries
    Kind("github-token", "vcs", _github, ("GITHUB_TOKEN", "GH_TOKEN")),
    Kind("github-fine-grained", "vcs", _github_fine, ("GITHUB_TOKEN",)),
    Kind("gitlab-token", "vcs", _gitlab, ("GITLAB_TOKEN", "CI_JOB_TOKEN")),
    Kind("npm-token", "vcs", _prefixed("np" + "m_", 36), ("NPM_TOKEN",)),
    Kind("pypi-token", "vcs", _pypi, ("PYPI_TOKEN", "TWINE_PASSWORD")),
    Kind("docker-hub-token", "vcs", _prefixed("dc" + "kr_pat_", 27, B64URL), ("DOCKERHUB_TOKEN",)),
    # chat and bots
    Kind("slack-token", "chat", lambda r: r.choice((_slack_bot, _slack_user))(r), ("SLACK_BOT_TOKEN",)),
    Kind("slack-webhook", "chat", lambda r: ("T" + r.body(8, UPPER + DIGITS) + "/B" + r.body(10, UPPER + DIGITS)
                                             + "/" + r.body(24), 0), ("SLACK_WEBHOOK_PATH",), bare=False),
    Kind("discord-bot-token", "chat", _discord_bot, ("DISCORD_TOKEN", "DISCORD_BOT_TOKEN")),
    Kind("discord-webhook", "chat", _discord_webhook, ("DISCORD_WEBHOOK_PATH",), bare=False),
    Kind("telegram-bot-token", "chat", _telegram, ("TELEGRAM_BOT_TOKEN",)),
    # payment
    Kind("stripe-key", "payment", _stripe, ("STRIPE_SECRET_KEY", "STRIPE_WEBHOOK_SECRET")),
    Kind("square-token", "payment", _square, ("SQUARE_ACCESS_TOKEN",)),
    Kind("braintree-token", "payment", _braintree, ("BRAINTREE_ACCESS_TOKEN",)),
    # mail and SMS
    Kind("twilio-api-key", "mail-sms", _twilio_key, ("TWILIO_API_KEY",)),
    Kind("twilio-auth-token", "mail-sms", lambda r: (r.hexs(32), 0), ("TWILIO_AUTH_TOKEN",), bare=False),
    Kind("sendgrid-key", "mail-sms", _sendgrid, ("SENDGRID_API_KEY",)),
    Kind("mailgun-key", "mail-sms", _mailgun, ("MAILGUN_API_KEY",)),
    Kind("mailchimp-key", "mail-sms", _mailchimp, ("MAILCHIMP_API_KEY",)),
    Kind("postmark-token", "mail-sms", lambda r: (r.uuid(), 0), ("POSTMARK_SERVER_TOKEN",), bare=False),
    # AI providers
    Kind("anthropic-key", "ai", _prefixed("sk-" + "ant-api03-", 95, B64URL), ("ANTHROPIC_API_KEY",)),
    Kind("openai-key", "ai", _openai, ("OPENAI_API_KEY",)),
    Kind("huggingface-token", "ai", _prefixed("hf" + "_", 34, UPPER + LOWER), ("HF_TOKEN",)),
    Kind("groq-key", "ai", _prefixed("gs" + "k_", 52), ("GROQ_API_KEY",)),
    Kind("replicate-token", "ai", _prefixed("r8" + "_", 37), ("REPLICATE_API_TOKEN",)),
    Kind("xai-key", "ai", _prefixed("xa" + "i-", 80), ("XAI_API_KEY",)),
    Kind("perplexity-key", "ai", _prefixed("pp" + "lx-", 48), ("PERPLEXITY_API_KEY",)),
    Kind("openrouter-key", "ai", lambda r: ("sk-" + "or-v1-" + r.hexs(64), 9), ("OPENROUTER_API_KEY",)),
    Kind("mistral-key", "ai", lambda r: (r.body(32), 0), ("MISTRAL_API_KEY",), bare=False),
    # other services
    Kind("shopify-token", "other", _prefixed("sh" + "pat_", 32, HEX), ("SHOPIFY_ACCESS_TOKEN",)),
    Kind("linear-key", "other", _prefixed("lin" + "_api_", 40), ("LINEAR_API_KEY",)),
    Kind("grafana-token", "other", _grafana, ("GRAFANA_TOKEN",)),
    Kind("newrelic-key", "other", _prefixed("NR" + "AK-", 27, UPPER + DIGITS), ("NEW_RELIC_API_KEY",)),
    Kind("age-secret-key", "other", _age, ("AGE_KEY",)),
    Kind("jwt", "other", _jwt, ("SESSION_JWT", "ACCESS_TOKEN")),
    Kind("private-key", "private-key", _private_key, ("PRIVATE_KEY",), count=10),
)


# --- contexts: where a named secret is written --------------------------------------------------

def _lower(name):
    return name.lower()


def _camel(name):
    head, *rest = name.lower().split("_")
    return head + "".join(part.capitalize() for part in rest)


def _env(r, name, value):
    quote = r.choice(("", "", '"', "'"))
    lead = r.choice(("export ", "", ""))
    return f"# .env for staging\nDEBUG=false\n{lead}{name}={quote}{value}{quote}\nLOG_LEVEL=info\n"


def _yaml(r, name, value):
    quote = r.choice(("", "", '"'))
    key = r.choice((_lower(name), name))
    return f"services:\n  api:\n    environment:\n      {key}: {quote}{value}{quote}\n      region: eu-west-1\n"


def _json(r, name, value):
    key = r.choice((_lower(name), _camel(name)))
    return json.dumps({"service": "billing", key: value, "retries": 3}, indent=r.choice((None, 2)))


def _toml(r, name, value):
    return f'[deploy]\nregion = "eu-west-1"\n{_lower(name)} = "{value}"\n'


def _python(r, name, value):
    return f'client = Client(base_url="https://api.example.com", {_lower(name)}="{value}")\n'


def _header(r, name, value):
    header = r.choice(("X-Api-Key", "X-Auth-Token", "Api-Token"))
    return f'curl -s -H "{header}: {value}" https://api.example.com/v1/items | jq .'


def _cli(r, name, value):
    flag = r.choice(("--token", "--api-key", "--secret", "--password"))
    sep = r.choice((" ", "="))
    return f"deploy-tool push --env prod {flag}{sep}{value} --verbose"


def _prose(r, kind, value):
    return r.choice((
        f"I pasted the wrong thing earlier, the {kind.replace('-', ' ')} is {value} so please rotate it.",
        f"Here it is: {value} (from the staging account)",
        f"Oops, that was {value}. Revoking now.",
    ))


def _url(r, name, value):
    return f"GET https://api.example.com/v1/orders?limit=10&{_lower(name)}={value} HTTP/1.1"


def tool_tail(r, value):
    """A `Bash:` tool line whose secret starts a few characters before the old 300-character
    cut of the detail, so that cutting first stored it minus its last characters."""
    secret_at = r.rng.randint(DISPLAY_CUT - 12, DISPLAY_CUT - 4)
    head = "docker run --rm -e APP_ENV=production -v /srv/app/data:/data -w /data registry.example.com/tools/cli:2.4 "
    while len(head) < secret_at - 24:
        head += r.choice(("--retry 3 ", "--timeout 30 ", "--region eu-west-1 ", "--format json ", "--quiet "))
    flag = r.choice(("--key ", "--auth ", "--with ", "--header x:"))
    head = head[: secret_at - len(flag)].ljust(secret_at - len(flag), "x")
    return head + flag + value + " --dry-run=false && echo done"


_NAMED_CONTEXTS = {"env": _env, "yaml": _yaml, "json": _json, "toml": _toml, "python": _python,
                   "header": _header, "cli": _cli, "url": _url}


def _sample(r, spec, context, secret, public):
    name = r.choice(spec.names)
    if context == "prose":
        text = _prose(r, spec.kind, secret)
    elif context == "tool-tail":
        text = tool_tail(r, secret)
    else:
        text = _NAMED_CONTEXTS[context](r, name, secret)
    return Planted(spec.kind, spec.family, context, text, secret, public)


def _vendor_samples(r):
    out = []
    for spec in KINDS:
        contexts = list(_NAMED_CONTEXTS)
        if spec.bare:
            contexts += ["prose", "tool-tail", "prose"]
        if spec.kind == "private-key":
            contexts = ["prose", "json", "env", "yaml"]
        r.rng.shuffle(contexts)
        for n in range(spec.count):
            context = contexts[n % len(contexts)]
            secret, public = spec.make(r)
            if spec.kind == "private-key":
                out.append(_private_key_sample(r, context, secret, public))
                continue
            if spec.kind == "slack-webhook":
                out.append(Planted(spec.kind, spec.family, "url", r.choice((
                    f"curl -X POST -d '{{\"text\":\"done\"}}' https://hooks.slack.com/services/{secret}",
                    f"SLACK_WEBHOOK_URL=https://hooks.slack.com/services/{secret}")), secret))
                continue
            if spec.kind == "discord-webhook":
                host = r.choice(("discord.com", "discordapp.com"))
                out.append(Planted(spec.kind, spec.family, "url", r.choice((
                    f"curl -H 'Content-Type: application/json' -d '{{\"content\":\"hi\"}}' https://{host}/api/webhooks/{secret}",
                    f'webhook_url: "https://{host}/api/webhooks/{secret}"')), secret))
                continue
            if spec.kind == "azure-storage-key" and r.rng.random() < 0.5:
                out.append(Planted(spec.kind, spec.family, "env", "AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=https;"
                                   f"AccountName=shopdata;AccountKey={secret};EndpointSuffix=core.windows.net", secret))
                continue
            if spec.kind == "aws-secret-key" and context in ("prose", "cli", "header", "url"):
                key_id = "AK" + "IA" + r.body(16, UPPER + "234567")
                out.append(Planted(spec.kind, spec.family, "prose", r.choice((
                    f"Access key ID,Secret access key\n{key_id},{secret}\n",
                    f"aws configure set aws_secret_access_key {secret}",
                    f"the pair is {key_id} / {secret}")), secret))
                continue
            if spec.kind == "twilio-auth-token" and context == "cli":
                sid = "A" + "C" + r.hexs(32)
                out.append(Planted(spec.kind, spec.family, "cli", f"curl -X POST https://api.twilio.com/2010-04-01/Accounts/{sid}/"
                                   f"Messages.json -u {sid}:{secret} --data-urlencode 'Body=hi'", secret))
                continue
            out.append(_sample(r, spec, context, secret, public))
    return out


def _private_key_sample(r, context, block, public):
    """A PEM block as pasted, in a service-account JSON (escaped newlines), an env line or a
    YAML literal; the secret is the key material between the BEGIN and END lines."""
    lines = block.split("\n")
    label, rows = lines[0].strip("-").removeprefix("BEGIN "), lines[1:-1]
    if context == "json":
        text = json.dumps({"type": "service_account", "project_id": "shop-prod", "private_key": block + "\n",
                           "client_email": "deploy@shop-prod.iam.gserviceaccount.com"})
        return Planted("private-key", "private-key", "json", text, "\\n".join(rows))
    if context == "env":
        escaped = block.replace("\n", "\\n")
        return Planted("private-key", "private-key", "env", f'JWT_PRIVATE_KEY="{escaped}"\n', "\\n".join(rows))
    if context == "yaml":
        indented = block.replace("\n", "\n    ")
        return Planted("private-key", "private-key", "yaml", f"tls:\n  key: |\n    {indented}\n",
                       "\n    ".join(rows))
    return Planted("private-key", "private-key", "prose", f"Here is the deploy key ({label.lower()}):\n{block}\n"
                   "Add it to ~/.ssh/ and chmod 600.", "\n".join(rows))


# --- database URLs --------------------------------------------------------------------------------

def _database_urls(r, n=24):
    out = []
    for i in range(n):
        password = r.awkward_password(i)
        scheme = r.choice(("postgres", "postgresql", "mysql", "mongodb+srv", "redis", "amqp", "mssql"))
        user = r.choice(("app", "admin", "root", "svc_billing", ""))
        host = r.choice(("db", "db.internal", "10.0.4.12", "cluster0.abcde.mongodb.net", "localhost"))
        url = f"{scheme}://{user}:{password}@{host}:{r.rng.randint(1000, 9999)}/{r.choice(('shop', 'app', '0'))}"
        context, text = r.choice((
            ("env", f"DATABASE_URL={url}\n"),
            ("env", f'export DATABASE_URL="{url}"'),
            ("yaml", f"database:\n  url: {url}\n"),
            ("prose", f'psycopg.OperationalError: connection to "{url}" failed: timeout expired'),
            ("python", f'engine = create_engine("{url}", pool_size=5)'),
            ("cli", f"psql '{url}' -c 'select 1'"),
        ))
        out.append(Planted("database-url", "database-url", context, text, password))
    return out


# --- generic assignments --------------------------------------------------------------------------

_PASSWORD_NAMES = ("password", "DB_PASSWORD", "POSTGRES_PASSWORD", "MYSQL_ROOT_PASSWORD", "admin_password",
                   "smtp_password", "REDIS_PASSWORD", "passwd", "db_pass")
_TOKEN_NAMES = ("token", "api_token", "API_TOKEN", "auth_token", "access_token", "SENTRY_AUTH_TOKEN", "bot_token")
_SECRET_NAMES = ("secret", "client_secret", "SECRET_KEY", "jwt_secret", "WEBHOOK_SECRET", "app_secret")
_API_KEY_NAMES = ("api_key", "apiKey", "API_KEY", "x_api_key", "DATADOG_API_KEY", "MAPBOX_API_KEY")


def _generic_text(r, context, name, value, password):
    if context == "env":
        return f"{name.upper()}={value}\n"
    if context == "yaml":
        return r.choice((f"{name}: {value}\n", f"db:\n  host: db\n  {name}: {value}\n", f'{name}: "{value}"\n'))
    if context == "json":
        return json.dumps({"user": "app", name: value})
    if context == "toml":
        return f'[auth]\n{name} = "{value}"\n'
    if context == "python":
        return r.choice((f'{name} = "{value}"\n', f"{name} = '{value}'\n", f"settings.configure({name}={value!r})"))
    if context == "header":
        header = "X-Api-Key" if not password else "X-Password"
        return f'curl -H "{header}: {value}" https://api.example.com/v1/me'
    if context == "cli":
        flag = "--password" if password else r.choice(("--token", "--api-key", "--secret"))
        return r.choice((f"mytool login {flag} {value} --user ana", f"mytool login {flag}={value}"))
    if context == "url":
        return f"https://api.example.com/export?format=csv&{name.lower()}={value}"
    what = "password" if password else r.choice(("token", "API key", "secret", "api token"))
    return r.choice((f"The {what} is {value} for the staging box.",
                     f"my {what}: {value}",
                     f"Use {what} {value} to log in." if password else f"the {what} is {value}, rotate it"))


def _generic(r):
    out = []
    groups = (("password-assignment", _PASSWORD_NAMES, True, 48),
              ("token-assignment", _TOKEN_NAMES, False, 30),
              ("secret-assignment", _SECRET_NAMES, False, 24),
              ("api-key-assignment", _API_KEY_NAMES, False, 24))
    contexts = ("env", "yaml", "json", "toml", "python", "header", "cli", "url", "prose")
    for kind, names, password, count in groups:
        for i in range(count):
            context = contexts[i % len(contexts)]
            if password:
                value = r.password(("wordword", "random", "symbols", "short")[i % 4])
                if context in ("url", "cli", "env") and r.rng.random() < 0.5:
                    value = value.replace("#", "5").replace("&", "7")   # as people paste them where # is special
            else:
                value = r.body(r.choice((24, 32, 32, 40)))
            out.append(Planted(kind, "generic", context, _generic_text(r, context, r.choice(names), value, password),
                               value))
    # A bearer header and HTTP basic auth: the value after the scheme.
    for _ in range(8):
        value = r.body(r.choice((32, 40, 64)), B64URL + ".")
        out.append(Planted("bearer-token", "generic", "header",
                           f"curl -H 'Authorization: Bearer {value}' https://api.example.com/v1/items", value))
    for _ in range(4):
        value = base64.b64encode(f"ana:{r.password('random')}".encode()).decode()
        out.append(Planted("basic-auth", "generic", "header", f"GET /admin HTTP/1.1\nAuthorization: Basic {value}\n",
                           value))
    return out


def planted(seed=12):
    """The planted corpus: a list of Planted, the same for the same seed."""
    r = _Random(seed)
    samples = _vendor_samples(r) + _database_urls(r) + _generic(r)
    for sample in samples:
        assert sample.secret in sample.text, sample
    # A random public part may by chance share a window with the secret (a Twilio account SID
    # and auth token are both hex: seed 60xxx drew one); `leaked` could not tell them apart,
    # so such a rare sample is left out rather than judged wrongly.
    return [sample for sample in samples if _windows_clear(sample)]


# --- the benign corpus ----------------------------------------------------------------------------

def _png_base64(r):
    raw = b"\x89PNG\r\n\x1a\n" + r.rng.randbytes(r.rng.randint(300, 1500))
    return base64.b64encode(raw).decode()


def _benign_makers(r):
    sha = lambda: r.hexs(40)  # noqa: E731
    return {
        "git-sha": lambda: r.choice((
            f"commit {sha()}\nAuthor: Ana <ana@example.com>\n\n    Fix the cache key",
            f"git checkout {sha()} && git cherry-pick {sha()[:7]}",
            f"https://github.com/acme/shop/commit/{sha()}",
            f'"sha": "{sha()}", "node_id": "C_kwDO{r.body(20)}"',
            f"HEAD is now at {sha()[:12]} Merge pull request #481",
            f"GIT_COMMIT={sha()} ./build.sh")),
        "uuid": lambda: r.choice((
            f"session_id: {r.uuid()}", f'{{"id": "{r.uuid()}", "status": "ok"}}',
            f"x-request-id: {r.uuid()}", f"GET /api/v1/items/{r.uuid()} 404",
            f"claude --resume {r.uuid()}", f"trace_id={r.uuid()} span_id={r.hexs(16)}")),
        "base64-image": lambda: r.choice((
            f'<img src="data:image/png;base64,{_png_base64(r)}" alt="chart">',
            f"background: url(data:image/png;base64,{_png_base64(r)});",
            f'{{"type": "image", "source": {{"type": "base64", "media_type": "image/png", "data": "{_png_base64(r)}"}}}}')),
        "integrity-hash": lambda: r.choice((
            f'"integrity": "sha512-{r.b64(64)}"',
            f'<script src="https://cdn.example.com/lib.js" integrity="sha384-{r.b64(48)}" crossorigin="anonymous"></script>',
            f"django==5.2.1 --hash=sha256:{r.hexs(64)}",
            f"github.com/acme/lib v1.4.2 h1:{r.b64(32)}",
            f"{r.hexs(64)}  dist/jezero-0.1.0.tar.gz")),
        "docker-digest": lambda: r.choice((
            f"image: ghcr.io/acme/shop@sha256:{r.hexs(64)}",
            f"Digest: sha256:{r.hexs(64)}\nStatus: Downloaded newer image for python:3.11-slim",
            f"FROM python:3.11-slim@sha256:{r.hexs(64)}",
            f"{r.hexs(12)}   acme/shop   latest   2 days ago   412MB")),
        "public-key": lambda: r.choice((
            f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{r.b64(32)[:43]} ana@laptop",
            f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{r.b64(300)} deploy@ci",
            "-----BEGIN PUBLIC KEY-----\n" + "\n".join(r.b64(48) for _ in range(5)) + "\n-----END PUBLIC KEY-----",
            f"PUBLIC_KEY={r.b64(32)}",
            f'"publicKey": "{r.b64(65)}"',
            f"VAPID_PUBLIC_KEY={r.b64(65, 'url').rstrip('=')}",
            f"pk_{r.choice(('live', 'test'))}_{r.body(24)}",
            f"age1{r.body(58, '023456789acdefghjklmnpqrstuvwxyz')}")),
        "csrf-token": lambda: r.choice((
            f'<input type="hidden" name="csrfmiddlewaretoken" value="{r.body(64)}">',
            f'<meta name="csrf-token" content="{r.body(40, B64URL)}">',
            f"csrfmiddlewaretoken={r.body(64)}&username=ana&next=%2F",
            f"X-CSRFToken: {r.body(64)}",
            f"Cookie: csrftoken={r.body(32)}; django_language=en")),
        "aws-example-key": lambda: r.choice((
            "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nexport AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "Access key: AKIAI44QH8DHBEXAMPLE (from the AWS docs)")),
        "hash-digest": lambda: r.choice((
            f"md5: {r.hexs(32)}", f"ETag: \"{r.hexs(32)}\"", f"sha1sum: {r.hexs(40)}",
            f"event_id: {r.hexs(32)}", f"cache hit for key node-modules-{r.hexs(64)}",
            f"fingerprint SHA256:{r.b64(32).rstrip('=')}")),
        "build-artifact": lambda: r.choice((
            f"dist/assets/index-{r.body(8, B64URL)}.js   142.31 kB │ gzip: 45.90 kB",
            f"api-{r.hexs(10)}-{r.body(5, LOWER + DIGITS)}   1/1   Running   0   3h",
            f"static/js/main.{r.hexs(8)}.chunk.js", f"wheel: jezero-0.1.0-py3-none-any.whl ({r.hexs(16)})")),
        "identifier": lambda: r.choice((
            "TWILIO_ACCOUNT_SID=A" + f"C{r.hexs(32)}", f"client_id: {r.rng.randint(10**11, 10**12)}-{r.body(32, LOWER + DIGITS)}.apps.googleusercontent.com",
            f"slack channel C{r.body(10, UPPER + DIGITS)}", f"stripe customer cus_{r.body(14)}",
            f"price_{r.body(24)} is the monthly plan", f"PaymentIntent pi_{r.body(24)} succeeded",
            f"kid: {r.body(43, B64URL)}", f"nonce=\"{r.b64(16)}\"")),
        "code-and-names": lambda: r.choice((
            "private_key: PKCS7PrivateKeyTypes", "token = nextPageToken", "apiKey: config.apiKey,",
            "password: hashedPassword,", "secret = SecretStr(value)", "token: AccessToken | None = None",
            f"max_tokens={r.rng.randint(256, 8192)}", "tokenizer: trigram remove_diacritics 1",
            "password_reset_timeout = 3600", "SESSION_COOKIE_NAME = 'sessionid'",
            f"cacheKey = `user:${{userId}}:{r.hexs(8)}`", "let keyId = crypto.randomUUID();")),
    }


def benign(seed=12, per_kind=40):
    """The benign corpus: `per_kind` samples of each kind of harmless high-entropy text."""
    r = _Random(seed + 1)
    makers = _benign_makers(r)
    return [Benign(kind, make()) for kind, make in makers.items() for _ in range(per_kind)]


def report(samples, leaks, benign_samples, changed):
    """Survivors per kind and false positives per kind, as printable lines."""
    planted_by, leaked_by = Counter(s.kind for s in samples), Counter(s.kind for s in leaks)
    benign_by, changed_by = Counter(b.kind for b in benign_samples), Counter(b.kind for b in changed)
    lines = [f"{len(samples)} planted secrets of {len(planted_by)} kinds in "
             f"{len({s.context for s in samples})} contexts: {len(leaks)} survived"]
    lines += [f"  {kind}: {leaked_by[kind]}/{n} survived" for kind, n in sorted(planted_by.items()) if leaked_by[kind]]
    lines.append(f"{len(benign_samples)} benign samples of {len(benign_by)} kinds: {len(changed)} changed "
                 f"({100 * len(changed) / max(len(benign_samples), 1):.1f} %)")
    lines += [f"  {kind}: {changed_by[kind]}/{n} changed" for kind, n in sorted(benign_by.items()) if changed_by[kind]]
    return lines


def digest(samples):
    """A short fingerprint of a corpus (which seed made what), for reports."""
    return hashlib.sha256("\n".join(getattr(s, "text", "") for s in samples).encode()).hexdigest()[:12]
