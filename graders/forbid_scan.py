"""forbid_scan.py lists, as JSON, every import of a forbidden module in
the workspace's Python files: import and from-import statements, and
__import__ / importlib.import_module calls with a constant name.
argv[1] is a JSON config: {"root": dir, "forbidden": [...], "skip": [...]}.
"""

import ast, json, os, sys
cfg = json.load(open(sys.argv[1], encoding="utf-8"))
forbidden = set(cfg["forbidden"])
skip = set(cfg["skip"])
root = cfg["root"]
hits = []
for d, dirs, files in os.walk(root):
    dirs[:] = sorted(x for x in dirs if x not in skip)
    for name in sorted(files):
        if not name.endswith(".py"):
            continue
        p = os.path.join(d, name)
        rel = os.path.relpath(p, root)
        try:
            tree = ast.parse(open(p, "rb").read(), filename=rel)
        except (SyntaxError, ValueError):
            continue
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                f = node.func
                fname = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
                if fname in ("__import__", "import_module"):
                    names = [node.args[0].value]
            for n in names:
                if n.split(".")[0] in forbidden:
                    hits.append("%s:%d: %s" % (rel, node.lineno, n))
print(json.dumps(hits))
