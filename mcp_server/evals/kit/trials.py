"""The trial an answer becomes: what its sandboxed program runs (the payload) and what only tunepack keeps (one
expectation per test line), built from the benchmark's tests without running any of them.

    trial = trial_for(problem, answer)     # Trial(problem_id, payload, expect)
    reference = trial.reference_payload()  # the non-literal expected sides, in a program without the answer
    trial = trial.resolved(values)         # their values as the expected ones

A test line ``assert EXPR OP EXPECTED`` splits into a probe (EXPR, evaluated in the sandbox) and an expectation
(OP and EXPECTED, kept here): a literal expected side is evaluated here (``literal``), one that names nothing of
the answer by a program of its own (``reference``), and two sides that both name the answer come back together
(``pair``). The names of the answer the tests use (``answer_names``) are wrapped by the harness; the modules the
benchmark imports (``preload``) load before the answer. How a run is judged is ``verdict.py``.
"""

from __future__ import annotations

import ast
import builtins
import operator
from dataclasses import dataclass
from typing import Any

from .problems import Problem, extract_code

SAFE_CALLS: dict[str, Any] = {
    "set": set, "frozenset": frozenset, "tuple": tuple, "list": list, "dict": dict, "float": float, "int": int,
    "str": str, "bool": bool, "complex": complex, "sorted": sorted, "abs": abs,
}
BIN_OPS: dict[type, Any] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}
UNARY_OPS: dict[type, Any] = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
                              ast.Invert: operator.invert}
COMPARE = {ast.Eq: "eq", ast.NotEq: "ne", ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.In: "in",
           ast.NotIn: "not_in", ast.Is: "is", ast.IsNot: "is_not"}
MAX_LITERAL = 100_000
BUILTIN_NAMES = frozenset(dir(builtins))
NO_VALUE = object()  # a reference side that raised or could not come back as a plain value


@dataclass(frozen=True)
class Expectation:
    """One test line's check, kept by the parent: ``value OP expected`` (or ``expected OP value`` when
    ``swapped``), or the value's truthiness; ``inside``: the comparison itself ran in the sandbox."""

    op: str  # a COMPARE name, "truthy" or "falsy"
    expected: Any = None
    swapped: bool = False
    inside: bool = False
    pair: bool = False  # the probe is (left, right): both sides name the answer, compared here
    reference: str | None = None  # the expected side's expression, evaluated without the answer (then ``expected``)


@dataclass(frozen=True)
class Trial:
    problem_id: str
    payload: dict  # sent to the sandbox: module, namespace, trusted, entry_point, answer_names, imports, probes, tests
    expect: tuple[Expectation, ...]  # kept here, one per probe

    def reference_payload(self) -> dict | None:
        """The program that evaluates the expected sides that are not literals, without the answer (None when
        every expected side is a literal): the tests' imports and trusted code, then one probe per side."""
        sides = [e.reference for e in self.expect if e.reference is not None]
        if not sides:
            return None
        return {**self.payload, "module": "", "probes": sides, "tests": "", "answer_names": [],
                "entry_point": None}

    def resolved(self, values: list[Any]) -> "Trial":
        """This trial with the reference run's values as the expected sides; a side that raised or came back as
        no plain value (``NO_VALUE``) is evaluated beside the answer's side instead, both compared here."""
        found, expect, probes = iter(values), [], list(self.payload["probes"])
        for i, e in enumerate(self.expect):
            if e.reference is None:
                expect.append(e)
                continue
            value = next(found, NO_VALUE)
            if value is NO_VALUE or _opaque_in(value):
                left, right = (e.reference, probes[i]) if e.swapped else (probes[i], e.reference)
                probes[i] = f"(({left}), ({right}))"
                expect.append(Expectation(e.op, pair=True))
            else:
                expect.append(Expectation(e.op, value, e.swapped))
        return Trial(self.problem_id, {**self.payload, "probes": probes}, tuple(expect))

    @property
    def decided(self) -> str:
        if self.payload["tests"]:
            return "proof"
        return "inside" if any(e.inside for e in self.expect) else "values"



def literal(node: ast.AST) -> Any:
    """The value of a benchmark's literal expression (numbers, strings, containers, a few pure built-ins);
    ValueError for anything that would need the answer's names (or cannot be evaluated here)."""
    try:
        value = _literal(node)
    except (TypeError, ArithmeticError, RecursionError) as exc:
        raise ValueError(str(exc)) from exc
    if isinstance(value, (str, bytes, list, tuple, set, frozenset, dict)) and len(value) > MAX_LITERAL:
        raise ValueError("too large")
    return value


def _literal(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        if any(isinstance(e, ast.Starred) for e in node.elts):
            raise ValueError("starred")
        items = [literal(e) for e in node.elts]
        return tuple(items) if isinstance(node, ast.Tuple) else items if isinstance(node, ast.List) else set(items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("dict unpacking")
        return {literal(k): literal(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, ast.UnaryOp) and type(node.op) in UNARY_OPS:
        return UNARY_OPS[type(node.op)](literal(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in BIN_OPS:
        left, right = literal(node.left), literal(node.right)
        if isinstance(node.op, ast.Pow) and (not isinstance(right, (int, float)) or abs(right) > 256):
            raise ValueError("large power")
        if isinstance(node.op, ast.Mult) and isinstance(right, int) and abs(right) > MAX_LITERAL:
            raise ValueError("large repeat")
        return BIN_OPS[type(node.op)](left, right)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in SAFE_CALLS \
            and not node.keywords and not any(isinstance(a, ast.Starred) for a in node.args):
        return SAFE_CALLS[node.func.id](*[literal(a) for a in node.args])
    raise ValueError(type(node).__name__)


def _split_assert(node: ast.Assert, trusted: frozenset[str]) -> tuple[str, Expectation]:
    """(the expression the sandbox evaluates, what the parent checks its value against). ``trusted``: the names
    the tests may use that are not the answer's (builtins, the tests' imports, the benchmark's own code)."""
    test = node.test
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in COMPARE:
        op, right = COMPARE[type(test.ops[0])], test.comparators[0]
        identity = op in ("is", "is_not")
        for probe, side, swapped in ((test.left, right, False), (right, test.left, True)):
            try:
                expected = literal(side)
            except ValueError:
                continue
            if identity and not any(expected is s for s in (None, True, False)):
                break  # identity of anything but a singleton cannot be judged from a copy
            return ast.unparse(probe), Expectation(op, expected, swapped)
        else:
            if not identity:
                return _split_names(test.left, right, op, trusted)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.unparse(test.operand), Expectation("falsy", inside=not _answer_call(test.operand))
    return ast.unparse(test), Expectation("truthy", inside=not _answer_call(test))


def _split_names(left: ast.expr, right: ast.expr, op: str, trusted: frozenset[str]) -> tuple[str, Expectation]:
    """A comparison of two expressions, neither a literal: the side that names nothing of the answer is the
    expected one, evaluated in a program without the answer; when both name it, both come back."""
    left_free, right_free = _answer_free(left, trusted), _answer_free(right, trusted)
    if right_free:
        return ast.unparse(left), Expectation(op, reference=ast.unparse(right))
    if left_free:
        return ast.unparse(right), Expectation(op, swapped=True, reference=ast.unparse(left))
    return f"(({ast.unparse(left)}), ({ast.unparse(right)}))", Expectation(op, pair=True)


def _answer_free(expr: ast.expr, trusted: frozenset[str]) -> bool:
    return all(n.id in trusted for n in ast.walk(expr) if isinstance(n, ast.Name))


def _bound(code: str) -> set[str]:
    """The names a piece of trusted code binds at its top level (defs, classes, assignments, imports)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in stmt.names)
        else:
            names.update(n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


def _answer_call(expr: ast.expr) -> bool:
    """A direct call of one of the answer's functions (``f(x)``) or a constant: its value's truthiness is judged
    here; for anything else (``math.isclose(f(x), y)``, ``a == f(x)``) the truth of the line was computed inside."""
    if isinstance(expr, ast.Constant):  # assert True, "...": nothing to compute
        return True
    return isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and not hasattr(builtins, expr.func.id)


class _Rename(ast.NodeTransformer):
    def __init__(self, old: str, new: str):
        self.old, self.new = old, new

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.Name(self.new, node.ctx) if node.id == self.old else node


def _is_doc(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Pass) or isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)


def _split_lines(body: list[ast.stmt], trusted: frozenset[str]) -> tuple[list[str], list[Expectation], list[str]] | None:
    """Probes + expectations + imports for a body of asserts; None when any other statement is there."""
    probes, expect, imports = [], [], []
    trusted = trusted | _bound("\n".join(ast.unparse(s) for s in body if isinstance(s, (ast.Import, ast.ImportFrom))))
    for stmt in body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.append(ast.unparse(stmt))
        elif isinstance(stmt, ast.Assert):
            probe, exp = _split_assert(stmt, trusted)
            probes.append(probe)
            expect.append(exp)
        elif not _is_doc(stmt):
            return None
    return probes, expect, imports


def _split_check(tests: str, entry: str | None,
                 trusted: frozenset[str] = BUILTIN_NAMES) -> tuple[list[str], list[Expectation], list[str]] | None:
    """HumanEval's ``def check(candidate): assert ...`` + ``check(entry)``, split into probes on ``entry``."""
    try:
        tree = ast.parse(tests)
    except SyntaxError:
        return None
    checks = [s for s in tree.body if isinstance(s, ast.FunctionDef) and s.name == "check"]
    if not entry or len(checks) != 1 or len(checks[0].args.args) != 1:
        return None
    check, imports = checks[0], []
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            imports.append(ast.unparse(stmt))
        elif stmt is check or _is_doc(stmt) or _is_metadata(stmt) or _is_call_of_check(stmt, entry):
            continue
        else:
            return None
    renamed = _Rename(check.args.args[0].arg, entry).visit(ast.Module(body=check.body, type_ignores=[]))
    split = _split_lines(renamed.body, trusted | _bound("\n".join(imports)))
    return None if split is None else (split[0], split[1], imports + split[2])


def _is_metadata(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) and t.id == "METADATA" for t in stmt.targets)


def _is_call_of_check(stmt: ast.stmt, entry: str) -> bool:
    return isinstance(stmt, ast.Expr) and ast.unparse(stmt) == f"check({entry})"


def _split_mbpp(tests: str, trusted: frozenset[str] = BUILTIN_NAMES) -> tuple[list[str], list[Expectation], list[str]] | None:
    try:
        return _split_lines(ast.parse(tests).body, trusted)
    except SyntaxError:
        return None



def trial_for(problem: Problem, answer: str) -> Trial:
    """The answer as a trial: HumanEval runs the prompt + answer as the module and re-runs the prompt's helpers
    for the tests; MBPP and JSONL problems run the answer, then their setup in a copy of its names."""
    code = extract_code(answer)
    if problem.benchmark == "humaneval":
        entry = problem.entry_point
        has_def = bool(entry) and any(isinstance(n, ast.FunctionDef) and n.name == entry for n in _top_level(code))
        module = problem.text + "\n    pass\n\n" + code if has_def else problem.text + code
        trusted, namespace = problem.text + "\n    pass\n", "fresh"
        known = BUILTIN_NAMES | (_bound(trusted) - {entry or ""})
        split = _split_check(problem.tests, entry, known)
    else:
        module, trusted, namespace = code, problem.setup.replace("\r\n", "\n"), "shared"
        known = BUILTIN_NAMES | _bound(trusted)
        split = _split_mbpp(problem.tests, known)
    payload: dict[str, Any] = {"module": module, "namespace": namespace, "trusted": trusted,
                               "entry_point": problem.entry_point, "probes": [], "tests": problem.tests,
                               "answer_names": [], "preload": _modules_of(trusted + "\n" + problem.tests)}
    expect: tuple[Expectation, ...] = ()
    if split is not None:
        probes, found, imports = split
        payload.update(probes=probes, tests="", trusted="\n".join([*imports, trusted]))
        expect = tuple(found)
        used = _loaded(probes)
    else:
        used = _loaded([problem.tests]) - _bound(problem.tests)
    payload["answer_names"] = sorted(used - known - _bound("\n".join(_imports_in(problem.tests))))
    return Trial(problem.id, payload, expect)


def _loaded(sources: list[str]) -> set[str]:
    names: set[str] = set()
    for source in sources:
        try:
            names.update(n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name))
        except SyntaxError:
            continue
    return names


def _imports_in(code: str) -> list[str]:
    try:
        return [ast.unparse(n) for n in ast.walk(ast.parse(code)) if isinstance(n, (ast.Import, ast.ImportFrom))]
    except SyntaxError:
        return []


def _modules_of(code: str) -> list[str]:
    """The modules the benchmark's code imports: loaded before the answer runs, so replacing their callables
    is noticed."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append(node.module)
    return sorted(set(found))


def _top_level(code: str) -> list[ast.stmt]:
    try:
        return ast.parse(code).body
    except SyntaxError:  # a body-only completion, or broken code: the module will say so
        return []


class Opaque:
    """A value the sandbox could only name (an object of the answer's own type): equal to nothing."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name} object>"


def _opaque_in(value: Any, depth: int = 0) -> bool:
    if isinstance(value, Opaque):
        return True
    if depth > 80:
        return False
    if isinstance(value, dict):
        return any(_opaque_in(k, depth + 1) or _opaque_in(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_opaque_in(x, depth + 1) for x in value)
    return False
