package sandbox_test

import (
	"os/exec"
	"strings"
	"testing"

	"benchd.dev/internal/testenv"
	"benchd.dev/sandbox"
)

// workloadPytest is a test module that uses threads and a subprocess.
const workloadPytest = `
import subprocess, threading
def test_threads():
    out = []
    ts = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    assert sorted(out) == list(range(8))
def test_subprocess():
    assert subprocess.run(["sh", "-c", "echo hi"], capture_output=True, text=True).stdout == "hi\n"
`

// TestWorkloads: the filter's allow list is enough for what agents run.
// Each workload runs in the sandbox, as the agent's uid, in its
// workspace, and must exit 0 and print what it was asked to.
func TestWorkloads(t *testing.T) {
	tests := []struct {
		name   string
		needs  []testenv.Feature
		script string
		want   string
	}{
		{"coreutils", nil, `mkdir d && echo hello >d/f && cp d/f g && sort g | tr a-z A-Z && ls d && rm -r d g && sha256sum /etc/passwd >/dev/null && echo done`, "HELLO\nf\ndone"},
		{"python threads and subprocess", []testenv.Feature{testenv.Python}, `/usr/bin/python3 -c '
import subprocess, threading, concurrent.futures as cf
with cf.ThreadPoolExecutor(4) as ex:
    print(sum(ex.map(lambda x: x * x, range(10))))
print(subprocess.check_output(["echo", "sub"], text=True).strip())
with cf.ProcessPoolExecutor(2) as ex:
    print(sum(ex.map(abs, [-1, -2, -3])))
'`, "285\nsub\n6"},
		{"pytest", []testenv.Feature{testenv.Python, testenv.Pytest}, `cat >test_w.py <<'PY'` + workloadPytest + `PY
/usr/bin/python3 -m pytest -q -p no:cacheprovider test_w.py | tail -1 | cut -d' ' -f1`, "2"},
		{"node", []testenv.Feature{testenv.Node}, `node -e '
const cp = require("child_process"); const fs = require("fs");
fs.writeFileSync("n.txt", "x"); console.log(cp.execSync("cat n.txt").toString());
setTimeout(() => console.log("timer"), 10)'`, "x\ntimer"},
		{"git", []testenv.Feature{testenv.Git}, `git init -q r && cd r && echo a >a && git add a &&
git -c user.name=a -c user.email=a@b commit -qm first && git log --format=%s`, "first"},
		{"cc", []testenv.Feature{testenv.CC}, `printf '#include <stdio.h>\nint main(void){puts("hello from c");return 0;}\n' >h.c && cc -O1 -o h h.c && ./h`, "hello from c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.needs...)
			res, out, errOut := r.run(r.config("/bin/sh", "-c", "cd /workspace && "+tt.script, r.marker))
			if res.ExitCode != 0 || strings.TrimSpace(out) != tt.want {
				t.Fatalf("exit %d, stdout %q, want exit 0 and %q; stderr:\n%s", res.ExitCode, out, tt.want, errOut)
			}
		})
	}
}

// TestAgentCLIVersions runs each agent CLI's --version in the sandbox,
// as the engine runs them (the install tree bound read-only).
func TestAgentCLIVersions(t *testing.T) {
	testenv.Require(t, testenv.NodeAgents)
	for _, cli := range []string{"codex", "claude", "qwen"} {
		t.Run(cli, func(t *testing.T) {
			r := newRig(t)
			cfg := r.config(testenv.AgentsPrefix+"/node_modules/.bin/"+cli, "--version")
			cfg.Binds = append(cfg.Binds, sandbox.Bind{Source: testenv.AgentsPrefix, Target: testenv.AgentsPrefix})
			res, out, errOut := r.run(cfg)
			if res.ExitCode != 0 || strings.TrimSpace(out) == "" {
				t.Fatalf("exit %d, stdout %q; stderr:\n%s", res.ExitCode, out, errOut)
			}
			if host, err := exec.Command(testenv.AgentsPrefix+"/node_modules/.bin/"+cli, "--version").Output(); err == nil && string(host) != out {
				t.Errorf("in the sandbox %q, on the host %q", out, host)
			}
		})
	}
}
