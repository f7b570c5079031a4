"""The package's shape: no import cycle between lcbayes modules, no module importing another's
private names, and no module over the size ARCHITECTURE.md allows.

Imports are read from the source (``ast``), every ``import`` and ``from ... import`` of an
lcbayes module, also those inside functions (a lazy import is still a dependency); only those
under ``if TYPE_CHECKING:`` are left out, since they never run.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "lcbayes"
#: Lines a module may have unless ARCHITECTURE.md names it with a reason.
MAX_LINES = 400


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _type_checking_lines(tree: ast.AST) -> set[int]:
    """Line numbers of statements under ``if TYPE_CHECKING:``."""
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, child.end_lineno + 1))
    return lines


def _imports(name: str) -> list[tuple[str, list[str], int]]:
    """``(module imported from, names imported, line)`` of every lcbayes import of ``name``."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    package = name if _is_package(name) else name.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, [], node.lineno) for a in node.names
                    if a.name.split(".")[0] == "lcbayes"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source.split(".")[0] == "lcbayes":
                out.append((source, [a.name for a in node.names], node.lineno))
    return out


def _lazy_api() -> set[str]:
    """The modules behind the lazily loaded public names (``lcbayes.API``, read from source)."""
    tree = ast.parse(MODULES["lcbayes"].read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "API":
            return set(ast.literal_eval(node.value).values())
    return set()


def _dependencies(name: str) -> set[str]:
    """The lcbayes modules ``name`` imports (``from pkg import module`` counts as the module;
    the package depends on every module of its lazily loaded API)."""
    deps = _lazy_api() if name == "lcbayes" else set()
    for source, names, _ in _imports(name):
        targets = [f"{source}.{n}" for n in names if f"{source}.{n}" in MODULES]
        deps.update(targets or ([source] if source in MODULES else []))
        if len(targets) < len(names) and source in MODULES:
            deps.add(source)  # some names are the module's own attributes
    deps.discard(name)
    return deps


def test_the_scan_sees_the_package():
    assert {"lcbayes", "lcbayes.engines.em", "lcbayes.comparison.registry",
            "lcbayes.render", "lcbayes._version"} <= set(MODULES)
    assert "lcbayes.engines.squarem" in _dependencies("lcbayes.engines.em_loop")
    # lazy imports inside functions count, and so does the package's lazy API
    assert "lcbayes.comparison.report" in _dependencies("lcbayes.comparison.table")
    assert "lcbayes.engines.em" in _dependencies("lcbayes")


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of the directed graph ``{node: nodes it imports}`` as a path, or ``None``."""
    state: dict[str, int] = {}  # 1 visiting, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == 1:
                return [*stack[stack.index(dep):], dep]
            if dep not in state and (found := visit(dep)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for name in sorted(graph):
        if name not in state and (found := visit(name)):
            return found
    return None


def test_no_import_cycle():
    cycle = find_cycle({name: _dependencies(name) for name in MODULES})
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_check_finds_a_cycle():
    """The check above can fail: one made-up back edge from the render layer to the package
    (which imports everything) closes a cycle."""
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    graph = {name: set(_dependencies(name)) for name in MODULES}
    graph["lcbayes.render"].add("lcbayes")
    assert "lcbayes.render" in find_cycle(graph)


def _imports_jax(name: str) -> bool:
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    return any((isinstance(n, ast.Import) and any(a.name.split(".")[0] == "jax" for a in n.names))
               or (isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "jax")
               for n in ast.walk(tree))


def test_every_module_computing_with_jax_sets_jax_up_first():
    """64-bit floats and the compilation cache (lcbayes.jax_setup) come with every module that
    imports JAX: through its own imports or its parent packages'."""
    graph = {name: _dependencies(name) for name in MODULES}

    def closure(name: str) -> set[str]:
        seen, todo = set(), [name]
        while todo:
            node = todo.pop()
            parents = [".".join(node.split(".")[:i]) for i in range(2, node.count(".") + 1)]
            for dep in [*graph[node], *parents]:
                if dep not in seen:
                    seen.add(dep)
                    todo.append(dep)
        return seen

    exempt = {"lcbayes.jax_setup", "lcbayes.cache"}  # they configure JAX, they compute nothing
    missing = [name for name in MODULES if name not in exempt and _imports_jax(name)
               and "lcbayes.jax_setup" not in closure(name)]
    assert not missing, f"modules using JAX without lcbayes.jax_setup: {missing}"
    assert "lcbayes.jax_setup" in closure("lcbayes.engines.squarem")  # through its package


def test_no_module_imports_a_private_name_of_another():
    offences = []
    for name in MODULES:
        for source, names, line in _imports(name):
            private = [n for n in names if n.startswith("_") and not n.startswith("__")]
            if private and source != name:
                offences.append(f"{MODULES[name].relative_to(ROOT)}:{line} imports "
                                f"{private} from {source}")
    assert not offences, "\n".join(offences)


def _size_exceptions() -> dict[str, str]:
    """``{path: reason}`` of the modules ARCHITECTURE.md allows to be long (its table
    "Long modules")."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Long modules", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2).strip()
            for m in re.finditer(r"^\| `([^`]+\.py)` \| (.+?) \|$", section, re.MULTILINE)}


def test_no_module_is_long_unless_architecture_says_why():
    allowed = _size_exceptions()
    long = {}
    for path in MODULES.values():
        n = len(path.read_text(encoding="utf-8").splitlines())
        rel = str(path.relative_to(ROOT))
        if n > MAX_LINES and rel not in allowed:
            long[rel] = n
    assert not long, f"modules over {MAX_LINES} lines not explained in ARCHITECTURE.md: {long}"
    stale = [p for p in allowed if not (ROOT / p).is_file()]
    assert not stale, f"ARCHITECTURE.md explains modules that do not exist: {stale}"


def diagram_layers() -> dict[str, int]:
    """``{module: line}`` from ARCHITECTURE.md's layer diagram (the first code block after
    "## Layers"; line 0 is the top layer). A line names modules (``data.py``,
    ``samplers/chib.py``) and packages (``cli/``: every module in it) before its description; a
    line that starts with wide indent continues a description. A module named on its own wins
    over its package's line."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8").split("## Layers", 1)[1]
    rows = [line for line in text.split("```", 2)[1].splitlines()
            if line.strip() and not line.startswith("    ")]
    named: dict[str, int] = {}
    packages: dict[str, int] = {}
    for row, line in enumerate(rows):
        for token in line.split("   ")[0].split():
            dotted = "lcbayes." + token.rstrip("/").removesuffix(".py").replace("/", ".")
            if token.endswith(".py"):
                named[dotted] = row
            elif token.endswith("/"):
                packages[dotted] = row
    layers = dict(named)
    for module in MODULES:
        for package, row in packages.items():
            if module not in named and (module == package or module.startswith(package + ".")):
                layers[module] = row
    return layers


def test_every_module_sits_in_the_layer_diagram_and_imports_only_below_it():
    layers = diagram_layers()
    unplaced = sorted(m for m in MODULES if m not in layers and m != "lcbayes")
    assert unplaced == [], "ARCHITECTURE.md's layer diagram leaves these out"
    upward = sorted(f"{m} (line {layers[m]}) imports {d} (line {layers[d]})"
                    for m in layers for d in _dependencies(m) if d in layers
                    and layers[d] < layers[m])
    assert upward == []


def test_the_layer_check_finds_an_upward_import():
    layers = diagram_layers()
    assert layers["lcbayes.cli.compare"] < layers["lcbayes.engines.em"] < layers["lcbayes.data"]


def module_table() -> list[str]:
    """The modules named by ARCHITECTURE.md's table "Modules, one line each" (the first cell of
    each row, a path under ``lcbayes/``), in order."""
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Modules, one line each", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `([^`]+)` \|", section, re.MULTILINE)


def table_problems(named: list[str], modules: set[str]) -> dict[str, list[str]]:
    """What is wrong with a module table: modules it leaves out, names twice, or names that do
    not exist."""
    return {"missing": sorted(modules - set(named)),
            "twice": sorted({m for m in named if named.count(m) > 1}),
            "not modules": sorted(set(named) - modules)}


def test_every_module_has_one_row_in_the_module_table():
    modules = {str(p.relative_to(PACKAGE)) for p in MODULES.values()}
    problems = table_problems(module_table(), modules)
    assert problems == {"missing": [], "twice": [], "not modules": []}


def test_the_table_check_finds_a_missing_a_doubled_and_a_stale_row():
    problems = table_problems(["a.py", "b.py", "b.py", "gone.py"], {"a.py", "b.py", "c.py"})
    assert problems == {"missing": ["c.py"], "twice": ["b.py"], "not modules": ["gone.py"]}
