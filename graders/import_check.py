"""import_check.py reads a JSON config (files, local names, test-only
allowances) and prints the imports that are neither in the standard
library nor local, as JSON.
"""

import ast, json, sys
cfg = json.load(open(sys.argv[1], encoding="utf-8"))
std = set(sys.stdlib_module_names) | {"__future__"}
local = set(cfg["local"])
bad = []
def is_test(p):
    b = p.rsplit("/", 1)[-1]
    return b.startswith("test_") or b.endswith("_test.py") or b == "conftest.py"
for rel in cfg["files"]:
    allowed = std | local | (set(cfg["test_allow"]) if is_test(rel) else set())
    try:
        src = open(rel, "rb").read()
        tree = ast.parse(src, filename=rel)
    except (SyntaxError, ValueError):
        continue
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module:
                names = [node.module]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            f = node.func
            fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if fname in ("__import__", "import_module"):
                names = [node.args[0].value]
        for n in names:
            top = n.split(".")[0]
            if top and top not in allowed:
                bad.append("%s:%d: %s" % (rel, node.lineno, n))
print(json.dumps(bad))
