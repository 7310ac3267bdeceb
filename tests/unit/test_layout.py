"""The house's rules, checked on the source: who may import whom, and that the library's
modules import one another in no circle (docs/design.md "The layout test")."""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def imports(path):
    """Every module name a file imports (absolute, or relative resolved to its package)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(REPO).with_suffix("").parts[:-1])
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            names.append(base)
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def test_library_never_imports_the_django_project():
    """jezero_site wires library up; library does not reach back for settings helpers or names."""
    offenders = [f"{path.relative_to(REPO)}: {name}" for path in (REPO / "library").rglob("*.py")
                 for name in imports(path) if name == "jezero_site" or name.startswith("jezero_site.")]
    assert offenders == []


def test_the_vocabulary_and_the_connectors_need_no_django():
    """The configuration loads them before Django is set up."""
    files = [REPO / "library" / "vocabulary.py", REPO / "library" / "schema.py", *(REPO / "connectors").rglob("*.py")]
    offenders = [f"{path.relative_to(REPO)}: {name}" for path in files for name in imports(path)
                 if name == "django" or name.startswith(("django.", "library.models", "library.ingest"))]
    assert offenders == []


# The two circles the house keeps. models <-> store: the Item model and its queryset call the
# index writer on every write, and the writer reads items back. jobs <-> tasks: a job enqueues
# the Huey task that runs it, and the task calls back into the job.
ALLOWED_CYCLES = ({"library.models", "library.store"}, {"library.jobs", "library.tasks"})


def module_imports(root, package="library"):
    """{module: {imported module: line of the first such import}} for every module of
    `package` under `root`, naming only modules of that package.

    Every import statement counts, including those inside functions: deferring an import
    keeps Python's loader from tripping over a circle, but the modules still need each other
    and a reader still goes round it. Not counted: the import of its package's `__init__`
    that Python makes before a submodule's own (no statement, and no code depends on it)."""
    files = {}
    for path in (root / package).rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path

    def known(name):   # `library.ingest.summarize.SummaryError` -> `library.ingest.summarize`
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name

    graph = {}
    for name, path in files.items():
        here = ".".join(path.relative_to(root).parts[:-1])   # what a relative import starts from
        edges = {}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [known(alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                targets = [known(f"{base}.{alias.name}") for alias in node.names]
            else:
                continue
            for target in targets:
                if target and target != name:
                    edges.setdefault(target, node.lineno)
        graph[name] = edges
    return graph


def import_cycles(graph, allowed=()):
    """The import circles of `graph` (from `module_imports`) other than the `allowed` ones
    (sets of modules), each as "a -> b (line n) -> … -> a (line m)", the line being the import's
    in the module before it: the shortest circle through each module that is in one."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def connect(module):   # Tarjan: the strongly connected groups, i.e. the modules in circles
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in graph[module]:
            if other not in index:
                connect(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = set()
            while module not in group:
                group.add(stack.pop())
            on_stack.difference_update(group)
            if len(group) > 1:
                groups.append(group)

    for module in sorted(graph):
        if module not in index:
            connect(module)
    cycles = []
    for group in groups:
        if group in allowed:
            continue
        found = len(cycles)
        for start in sorted(group):
            path = _shortest_way_back(graph, start, group)
            if set(path) in allowed:
                continue
            turn = path.index(min(path))
            path = path[turn:] + path[:turn]
            steps = zip(path, path[1:] + path[:1], strict=True)
            shown = " -> ".join([path[0], *(f"{b} (line {graph[a][b]})" for a, b in steps)])
            if shown not in cycles:
                cycles.append(shown)
        if len(cycles) == found:   # every module's shortest circle is an allowed one; a longer one joins them
            cycles.append("a circle through " + ", ".join(sorted(group)))
    return cycles


def _shortest_way_back(graph, start, group):
    """The modules of the shortest circle from `start` back to it, within `group`."""
    came_from, frontier = {}, [start]
    while frontier:
        following = []
        for module in frontier:
            for other in sorted(graph[module]):
                if other == start:
                    path = [module]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1]
                if other in group and other not in came_from:
                    came_from[other] = module
                    following.append(other)
        frontier = following
    raise AssertionError(f"{start} is in no circle")


def test_library_modules_import_one_another_in_no_circle():
    """A module never needs, even through others or inside a function, a module that needs it
    (but for models <-> store and jobs <-> tasks): each can be read, and changed, after those
    it uses. A circle found is named with the line of each import in it."""
    cycles = import_cycles(module_imports(REPO), ALLOWED_CYCLES)
    assert cycles == [], "import circles among library modules:\n" + "\n".join(cycles)


def test_the_circle_check_sees_imports_inside_functions_and_through_other_modules(tmp_path):
    """The check itself: a circle of three modules closed by an import inside a function is
    found and named; an allowed pair is not reported."""
    files = {
        "library/__init__.py": "",
        "library/a.py": "from library import b\n",
        "library/b.py": "from . import c\n",
        "library/c.py": "def later():\n    from library.a import something\n",
        "library/jobs.py": "from library import tasks\n",
        "library/tasks.py": "def run():\n    import library.jobs\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert import_cycles(module_imports(tmp_path), ALLOWED_CYCLES) == [
        "library.a -> library.b (line 1) -> library.c (line 1) -> library.a (line 2)",
    ]
