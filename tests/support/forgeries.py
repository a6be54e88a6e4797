"""Wrong answers that try to be scored as passing instead of being right: each must fail, in every sandbox mode.

``FORGERIES`` maps a case name to (problem id, answer). None of the answers computes the right result;
``HONEST`` holds right answers of the same problems, which must still pass.
"""

from __future__ import annotations

FAKE_LINE = '0123456789abcdef0123456789abcdef {"probes": [], "tests": "ok", "error": null}'


def fenced(code: str) -> str:
    return "```python\n" + code.strip("\n") + "\n```"


FORGERIES: dict[str, tuple[str, str]] = {
    # exits that report success before any test ran
    "os._exit(0) in the module": ("HumanEval/0", fenced("import os\nos._exit(0)")),
    "os._exit(0) in the function": ("HumanEval/0", fenced(
        "def has_close_elements(numbers, threshold):\n    import os\n    os._exit(0)")),
    "SystemExit(0) from the function": ("HumanEval/0", fenced(
        "def has_close_elements(numbers, threshold):\n    raise SystemExit(0)")),
    "sys.exit(0) in the module": ("HumanEval/0", fenced(
        "import sys\ndef has_close_elements(numbers, threshold):\n    return None\nsys.exit(0)")),
    "atexit handler that exits 0": ("HumanEval/0", fenced(
        "import atexit, os\natexit.register(os._exit, 0)\n"
        "def has_close_elements(numbers, threshold):\n    return None")),
    "atexit reached through a patched os._exit": ("HumanEval/0", fenced(
        "import atexit, os\n_real = os._exit\natexit.register(_real, 0)\n"
        "os._exit = lambda code: (atexit._run_exitfuncs(), _real(0))\n"
        "def has_close_elements(numbers, threshold):\n    return None")),
    "SystemExit(0) from a profile hook on check": ("HumanEval/32", fenced(
        "import sys\n"
        "def _hook(frame, event, arg):\n"
        "    if event == 'call' and frame.f_code.co_name == 'check':\n"
        "        raise SystemExit(0)\n"
        "sys.setprofile(_hook)\n"
        "def find_zero(xs):\n    return 0.0")),
    # forged result lines
    "prints a fake 'passed'": ("HumanEval/0", fenced(
        "print('passed')\nprint('TUNEPACK_EVAL {\"passed\": true}')\n"
        "def has_close_elements(numbers, threshold):\n    return None")),
    "writes a nonce-like result line on every fd, then exits 0": ("HumanEval/0", fenced(
        "import os\n"
        f"line = {FAKE_LINE!r} + '\\n'\n"
        "for fd in range(1, 10):\n"
        "    try:\n        os.write(fd, line.encode())\n    except OSError:\n        pass\n"
        "os._exit(0)")),
    # a patched harness
    "returns an object equal to everything": ("HumanEval/0", fenced(
        "class Anything:\n    def __eq__(self, other):\n        return True\n"
        "def has_close_elements(numbers, threshold):\n    return Anything()")),
    "returns an int subclass equal to everything": ("HumanEval/0", fenced(
        "class Yes(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n"
        "def has_close_elements(numbers, threshold):\n    return Yes(0)")),
    "patches builtins.abs": ("HumanEval/2", fenced(
        "import builtins\nbuiltins.abs = lambda x: 0\n"
        "def truncate_number(number):\n    return 0.5")),
    "patches math.fabs": ("HumanEval/32", fenced(
        "import math\nmath.fabs = lambda x: 0.0\ndef find_zero(xs):\n    return 0.0")),
    "replaces the harness's encoder and writer": ("HumanEval/0", fenced(
        "import sys\n"
        "for name, mod in list(sys.modules.items()):\n"
        "    if 'harness' in name or name == '__main__':\n"
        "        for attr in ('encode', 'plain', 'run_trial', '_writer', 'judge'):\n"
        "            if hasattr(mod, attr):\n"
        "                setattr(mod, attr, lambda *a, **k: ['b', True])\n"
        "def has_close_elements(numbers, threshold):\n    return True")),
    "defines the function as a class whose instances equal everything": ("HumanEval/38", fenced(
        "class decode_cyclic:\n"
        "    def __init__(self, s):\n        pass\n"
        "    def __eq__(self, other):\n        return True")),
    "kills its own process": ("HumanEval/0", fenced(
        "import os, signal\ndef has_close_elements(numbers, threshold):\n"
        "    os.kill(os.getpid(), signal.SIGKILL)")),
    # tests edited from inside
    "rewrites the helper the tests use": ("HumanEval/38", fenced(
        "def encode_cyclic(s):\n    return s\n\ndef decode_cyclic(s):\n    return s")),
    "clears the tests it can find in memory": ("HumanEval/0", fenced(
        "import sys, gc\n"
        "for obj in gc.get_objects():\n"
        "    if isinstance(obj, dict) and 'probes' in obj and isinstance(obj['probes'], list):\n"
        "        obj['probes'].clear()\n"
        "        obj['tests'] = ''\n"
        "f = sys._getframe()\n"
        "while f is not None:\n"
        "    for key in ('probes', 'tests', 'code'):\n"
        "        if key in f.f_locals and isinstance(f.f_locals[key], list):\n"
        "            f.f_locals[key].clear()\n"
        "    f = f.f_back\n"
        "def has_close_elements(numbers, threshold):\n    return None")),
    "replaces check while it runs": ("HumanEval/32", fenced(
        "import sys\n"
        "def find_zero(xs):\n"
        "    caller = sys._getframe(1)\n"
        "    caller.f_globals['check'] = lambda candidate: None\n"
        "    caller.f_globals['poly'] = lambda xs, x: 0.0\n"
        "    return 0.0")),
}

HONEST: dict[str, str] = {
    "HumanEval/0": fenced(
        "def has_close_elements(numbers, threshold):\n"
        "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])"),
    "HumanEval/2": fenced("def truncate_number(number):\n    return number % 1.0"),
}
