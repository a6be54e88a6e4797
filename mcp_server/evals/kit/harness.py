"""The in-process part of scoring: run the answer's module, then the trusted tests, and write one result line.

    status = run_trial(payload, nonce, write)     # in the sandboxed process; write(text) sends the result line

``payload`` (built by ``verdict.trial_for``; it never holds an expected value or the nonce):
  module       the answer's code (HumanEval: the prompt, then the answer), run first as ``__main__``
  namespace    "fresh": the tests get a namespace of their own with the prompt's helpers re-run from
               ``trusted`` (HumanEval); "shared": a copy of the module's names, then ``trusted`` (MBPP setup)
  trusted      code of the benchmark, run into the tests' namespace after the module
  entry_point  the function under test: the tests see it wrapped so that it returns plain values only
  answer_names the answer's names the tests use ("shared"): each callable wrapped like the entry point, each
               other value copied as a plain value (or left out)
  preload      the modules the benchmark's code imports, loaded before the answer runs so that its callables
               are noted too
  probes       expressions whose values come back, encoded by type (the parent compares them)
  tests        statements run after the probes when the tests cannot be split into values ("" otherwise)

The result line is ``NONCE JSON`` with JSON = {"probes": [...], "tests": "ok" | error | null, "error": ...}. It
is written only after the last probe or test statement returned, and the process exits right after it with
``os._exit`` (so ``atexit`` handlers never run). Before the answer runs, everything trusted is compiled, the
builtins are copied for the tests, and the callables of every loaded module are noted: an answer that
replaces one (``math.fabs``, ``builtins.abs``, this harness) or installs a trace or profile function fails.
What stays possible in-process: code that reads its own memory (frames, ``gc``, ctypes) can find the nonce;
the parent therefore decides from the values wherever the tests allow (see ``verdict.py``).

Standard library only. Run standalone (``python -c SOURCE`` with a JSON payload + nonce on stdin), it writes
the result line as the last line of stdout instead (docker mode).
"""

import builtins
import json
import os
import sys

MAX_DEPTH, MAX_ITEMS = 64, 200_000
HEAPTYPE = 1 << 9
PLAIN_SCALARS = (type(None), bool, int, float, complex, str, bytes)
VIEWS: tuple = (type({}.keys()), type({}.values()), type({}.items()))


class _Budget:
    def __init__(self) -> None:
        self.items = 0

    def spend(self) -> None:
        self.items += 1
        if self.items > MAX_ITEMS:
            raise ValueError(f"the value holds more than {MAX_ITEMS} items")


def plain(value, depth: int = 0, budget: _Budget | None = None):
    """An exact copy of ``value`` in built-in types (subclasses of them converted through the base type's own
    methods, so an overridden ``__eq__`` or ``__iter__`` never runs); TypeError for any other type."""
    budget = budget or _Budget()
    budget.spend()
    if depth > MAX_DEPTH:
        raise ValueError(f"the value is nested deeper than {MAX_DEPTH}")
    kind = type(value)
    if kind in PLAIN_SCALARS:
        return value
    nxt = depth + 1
    for base, convert in _CONVERTERS:
        if issubclass(kind, base):
            return convert(value, nxt, budget)
    name = type.__getattribute__(kind, "__name__")
    raise TypeError(f"returned a value of type {name}; the tests compare plain values "
                    "(None, bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset)")


_CONVERTERS = (
    (int, lambda v, d, b: int.__index__(v)),
    (float, lambda v, d, b: float.__float__(v)),
    (str, lambda v, d, b: str.__str__(v)),
    (bytes, lambda v, d, b: bytes.__bytes__(v)),
    (list, lambda v, d, b: [plain(x, d, b) for x in list.__iter__(v)]),
    (tuple, lambda v, d, b: tuple(plain(x, d, b) for x in tuple.__iter__(v))),
    (dict, lambda v, d, b: {plain(k, d, b): plain(x, d, b) for k, x in dict.items(v)}),
    (frozenset, lambda v, d, b: frozenset(plain(x, d, b) for x in frozenset.__iter__(v))),
    (set, lambda v, d, b: {plain(x, d, b) for x in set.__iter__(v)}),
)


def encode(value, depth: int = 0, budget: _Budget | None = None):
    """A JSON form of a value that keeps its exact type; anything but a built-in value is only named."""
    budget = budget or _Budget()
    budget.spend()
    kind = type(value)
    if depth > MAX_DEPTH:
        return ["?", "a value nested too deep"]
    d = depth + 1
    if value is None:
        return ["N"]
    if kind is bool:
        return ["b", value]
    if kind is int:
        return ["i", hex(value)]
    if kind is float:
        return ["f", value.hex()]
    if kind is complex:
        return ["c", value.real.hex(), value.imag.hex()]
    if kind is str:
        return ["s", value]
    if kind is bytes:
        return ["y", value.hex()]
    if kind in (list, tuple, set, frozenset):
        tag = {list: "l", tuple: "t", set: "S", frozenset: "F"}[kind]  # type: ignore[index]
        return [tag, [encode(x, d, budget) for x in kind.__iter__(value)]]
    if kind is dict:
        return ["d", [[encode(k, d, budget), encode(x, d, budget)] for k, x in dict.items(value)]]
    return ["?", type.__getattribute__(kind, "__name__")]


class _Guard:
    """What the trusted side keeps from before the answer ran: hooks, builtins, every module's callables."""

    def __init__(self) -> None:
        self.tampered: str | None = None
        self.hooked = False
        self.settrace, self.setprofile = sys.settrace, sys.setprofile
        self.gettrace, self.getprofile = sys.gettrace, sys.getprofile
        self.builtins = dict(builtins.__dict__)
        self.modules = dict(sys.modules)
        self.noted = self._note(self.modules)
        self.watched: list = []

    @staticmethod
    def _note(modules: dict) -> list:
        return [(name, module.__dict__, key, value) for name, module in modules.items()
                if module is not None and isinstance(getattr(module, "__dict__", None), dict)
                for key, value in list(module.__dict__.items())
                if callable(value) or type(value) is type(sys)]

    def preload(self, names) -> None:
        """Import the benchmark's modules before the answer runs and note their callables as well."""
        for name in names or ():
            try:
                __import__(str(name))
            except BaseException:  # noqa: BLE001, S110 - a module the sandbox lacks: the tests will say so
                pass
        new = {k: v for k, v in sys.modules.items() if k not in self.modules}
        self.modules.update(new)
        self.noted = self.noted + self._note(new)

    def watch(self, namespace: dict) -> None:
        """Note the tests' namespace and their builtins: an answer that rebinds one of their names while it runs
        (through its frames or the garbage collector) fails."""
        for ns in (namespace, namespace.get("__builtins__")):
            if type(ns) is dict:
                self.watched.append((ns, list(ns.items())))

    def copy(self) -> "_Guard":
        twin = object.__new__(_Guard)
        twin.__dict__.update(self.__dict__, tampered=None, hooked=False, watched=[])
        twin.modules, twin.noted = dict(self.modules), list(self.noted)
        return twin

    def unhook(self) -> None:
        """Remove trace and profile hooks, remembering that there were some."""
        if self.gettrace() is not None or self.getprofile() is not None:
            self.hooked = True
        self.settrace(None)
        self.setprofile(None)

    def check(self) -> None:
        """Raise RuntimeError when the answer changed anything noted, and remember it: a test that swallows the
        error still fails."""
        found = self.tampered or self._changed()
        if found:
            self.tampered = found
            raise RuntimeError(found)

    def _changed(self) -> str | None:
        self.unhook()
        if self.hooked:
            return "the answer installed a trace or profile function"
        modules = sys.modules
        for name, module in self.modules.items():
            if modules.get(name) is not module:
                return f"the answer replaced the module {name} in sys.modules"
        for name, namespace, key, value in self.noted:
            if namespace.get(key) is not value:
                return f"the answer replaced {name}.{key}"
        for namespace, items in self.watched:
            for key, value in items:
                if dict.get(namespace, key) is not value:
                    return f"the answer rebound {key} in the tests' names"
        return None

    def wrap(self, func, instances: bool = False):
        """``func`` as the tests see it: each call checked for tampering, its result made plain. ``instances``:
        a class under test (MBPP, your own problems) may return its own instances; nothing else may."""
        guard, keep = self, func if instances and isinstance(func, type) else None

        def entry_point(*args, **kwargs):
            result = func(*args, **kwargs); guard.unhook()  # noqa: E702 - one line: no trace event in between
            guard.check()
            kind = type(result)
            if keep is not None and issubclass(kind, keep) or kind is range:
                return result
            if kind in VIEWS or not kind.__flags__ & HEAPTYPE and hasattr(kind, "__next__"):
                return _Plain(iter(result), guard)  # a generator, iterator or dict view: its items made plain
            return plain(result)

        return entry_point


class _Plain:
    """An iterator over another's items, each made plain."""

    def __init__(self, inner, guard: _Guard) -> None:
        self.inner, self.guard = inner, guard

    def __iter__(self):
        return self

    def __next__(self):
        item = next(self.inner); self.guard.unhook()  # noqa: E702
        self.guard.check()
        return plain(item)


_PREPARED: _Guard | None = None


def prepare() -> None:
    """Take the snapshot once in the zygote; each forked program starts from a copy (saves ~6 ms a run)."""
    global _PREPARED
    _PREPARED = _Guard()


def _compile(payload: dict) -> tuple:
    """Everything trusted, compiled before the answer runs (later edits of the payload change nothing)."""
    trusted = compile(payload.get("trusted") or "", "<trusted>", "exec")
    probes = tuple(compile(p, f"<test {i + 1}>", "eval") for i, p in enumerate(payload.get("probes") or ()))
    tests = compile(payload["tests"], "<tests>", "exec") if payload.get("tests") else None
    return trusted, probes, tests


def _error(exc: BaseException) -> str:
    """The exception's class name and first argument, read without running any of the answer's code."""
    name = type.__getattribute__(type(exc), "__name__")
    args = BaseException.args.__get__(exc)  # type: ignore[attr-defined]
    first = args[0] if type(args) is tuple and args and type(args[0]) is str else ""
    return f"{name}: {first[:300]}" if first else name


def _namespace(payload: dict, module_ns: dict, guard: _Guard, trusted) -> dict:
    entry = payload.get("entry_point")
    if payload.get("namespace") == "shared":
        ns = dict(module_ns)
    else:
        ns = {"__name__": "__main__"}
    ns["__builtins__"] = dict(guard.builtins)
    if payload.get("namespace") == "shared":
        for name in {*(payload.get("answer_names") or ()), *([entry] if entry else [])}:
            _plain_name(ns, str(name), guard)
    exec(trusted, ns); guard.unhook()  # noqa: E702
    if entry and payload.get("namespace") != "shared" and callable(module_ns.get(entry)):
        ns[entry] = guard.wrap(module_ns[entry])  # after the prompt's helpers: the answer's function
    guard.watch(ns)
    return ns


def _plain_name(ns: dict, name: str, guard: _Guard) -> None:
    """One of the answer's names as the tests see it: a callable wrapped, a module kept (its callables are
    noted), any other value copied as a plain value, or left out when it is none."""
    if name not in ns:
        return
    value = ns[name]
    if type(value) is type(sys):
        return
    if callable(value):
        ns[name] = guard.wrap(value, instances=True)
        return
    try:
        ns[name] = plain(value)
    except (TypeError, ValueError, RecursionError):
        del ns[name]


def run_trial(payload: dict, nonce: str, write) -> int:
    """Run one trial; 0 when the module, every probe and the tests returned normally. Writes exactly one
    result line (unless the process is ended before the end, which the parent reads as "no proof")."""
    result: dict = {"probes": [], "tests": None, "error": None}
    dumps = json.dumps
    try:
        trusted, probes, tests = _compile(payload)
        module = compile(payload["module"], "<answer>", "exec")
    except (SyntaxError, ValueError) as exc:  # ValueError: a null byte in the source
        where = "the answer" if getattr(exc, "filename", "<answer>") == "<answer>" else "the test code"
        result["error"] = f"{where} does not compile: " + _error(exc)
        write(nonce + " " + dumps(result) + "\n")
        return 1
    guard = _PREPARED.copy() if _PREPARED is not None else _Guard()
    guard.preload(payload.get("preload"))
    status = _run(payload, module, trusted, probes, tests, guard, result)
    guard.unhook()
    found = guard.tampered or guard._changed()
    if found:
        result["error"], status = found, 1
    write(nonce + " " + dumps(result) + "\n")
    return status


def _run(payload, module, trusted, probes, tests, guard: _Guard, result: dict) -> int:
    module_ns = {"__name__": "__main__", "__builtins__": builtins}
    try:
        exec(module, module_ns); guard.unhook()  # noqa: E702
        guard.check()
        ns = _namespace(payload, module_ns, guard, trusted)
    except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included
        guard.unhook()
        result["error"] = "the answer's module failed: " + _error(exc)
        return 1
    for code in probes:
        try:
            value = eval(code, ns); guard.unhook()  # noqa: E702
            guard.check()
            result["probes"].append(encode(value))
        except BaseException as exc:  # noqa: BLE001
            guard.unhook()
            result["probes"].append({"raised": _error(exc)})
            return 1
    if tests is not None:
        try:
            exec(tests, ns); guard.unhook()  # noqa: E702
            guard.check()
            result["tests"] = "ok"
        except BaseException as exc:  # noqa: BLE001
            guard.unhook()
            result["tests"] = _error(exc)
            return 1
    return 0


def main() -> int:
    """Standalone: the payload (with "nonce") as JSON on stdin, the result line as the last line of stdout."""
    payload = json.loads(sys.stdin.read())
    nonce = payload.pop("nonce")
    out = sys.stdout

    def write(text: str) -> None:
        out.write("\n" + text)
        out.flush()

    status = run_trial(payload, nonce, write)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(status)


if __name__ == "__main__":
    main()
