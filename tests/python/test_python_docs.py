"""docs/python.md: every "today" snippet and its hpipe replacement give the same result.

The snippets live only in the document. Blocks tagged `python setup` make the inputs; `python today`
and `python hpipe` blocks come in pairs and run in two namespaces (each block sees the definitions
of the earlier blocks of its kind, and inputs made afresh, since some of today's code works in
place). The pair must agree on every variable that the hpipe block's last statement assigns.
"""
import ast
import pathlib
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
BLOCK = re.compile(r"^```python (setup|today|hpipe)\n(.*?)^```$", re.DOTALL | re.MULTILINE)


def blocks():
    return [(m.group(1), m.group(2), DOC.read_text()[:m.start()].count("\n") + 1)
            for m in BLOCK.finditer(DOC.read_text())]


def pairs():
    found = blocks()
    setup = [code for kind, code, _ in found if kind == "setup"]
    snippets = [(kind, code, line) for kind, code, line in found if kind != "setup"]
    assert len(setup) == 1 and snippets, f"{DOC}: expected one setup block and pairs of snippets"
    kinds = [kind for kind, _, _ in snippets]
    assert kinds == ["today", "hpipe"] * (len(kinds) // 2), f"{DOC}: today/hpipe blocks must alternate: {kinds}"
    return setup[0], list(zip(snippets[::2], snippets[1::2]))


def assigned_names(code):
    last = ast.parse(code).body[-1]
    assert isinstance(last, ast.Assign) and len(last.targets) == 1, f"the last statement must assign:\n{code}"
    target = last.targets[0]
    return [t.id for t in (target.elts if isinstance(target, ast.Tuple) else [target])]


def as_tensor(value):
    return value.detach() if isinstance(value, torch.Tensor) else torch.as_tensor(np.asarray(value))


def test_docs_pairs_give_the_same_results():
    setup, snippet_pairs = pairs()
    namespaces = {"today": {}, "hpipe": {}}
    for (_, today, line), (_, replacement, _) in snippet_pairs:
        for kind, code in (("today", today), ("hpipe", replacement)):
            exec(compile(setup, f"{DOC} setup", "exec"), namespaces[kind])
            exec(compile(code, f"{DOC} {kind} block at line {line}", "exec"), namespaces[kind])
        for name in assigned_names(replacement):
            want, got = as_tensor(namespaces["today"][name]), as_tensor(namespaces["hpipe"][name])
            torch.testing.assert_close(got, want, msg=lambda m: f"{DOC} pair at line {line}, `{name}`: {m}")
