package limits

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestParseKeyed(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]int64
		wantErr bool
	}{
		{
			name: "v1 memory.stat",
			in:   "cache 10084352\nrss 6496256\nrss_huge 0\ntotal_rss 16326656\ntotal_cache 323502080\n",
			want: map[string]int64{"cache": 10084352, "rss": 6496256, "rss_huge": 0, "total_rss": 16326656, "total_cache": 323502080},
		},
		{
			name: "v2 memory.stat",
			in:   "anon 209715200\nfile 4096\nkernel 1234\n",
			want: map[string]int64{"anon": 209715200, "file": 4096, "kernel": 1234},
		},
		{
			name: "v2 memory.events",
			in:   "low 0\nhigh 0\nmax 17\noom 1\noom_kill 1\noom_group_kill 0\n",
			want: map[string]int64{"low": 0, "high": 0, "max": 17, "oom": 1, "oom_kill": 1, "oom_group_kill": 0},
		},
		{
			name: "v1 memory.oom_control",
			in:   "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n",
			want: map[string]int64{"oom_kill_disable": 0, "under_oom": 0, "oom_kill": 2},
		},
		{
			name: "cgroup.events",
			in:   "populated 1\nfrozen 0\n",
			want: map[string]int64{"populated": 1, "frozen": 0},
		},
		{
			name: "pids.events",
			in:   "max 80\n",
			want: map[string]int64{"max": 80},
		},
		{name: "empty", in: "", want: map[string]int64{}},
		{name: "no value", in: "populated\n", wantErr: true},
		{name: "not a number", in: "max lots\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseKeyed(strings.NewReader(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseKeyed error = %v, want error %v", err, tt.wantErr)
			}
			if !tt.wantErr && !maps.Equal(got, tt.want) {
				t.Errorf("parseKeyed = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseProcCgroup(t *testing.T) {
	tests := []struct {
		name        string
		in          string
		wantV1      map[string]string
		wantUnified string
		wantHasV2   bool
		wantErr     bool
	}{
		{
			name: "hybrid",
			in: "9:name=systemd:/\n8:pids:/\n6:freezer:/\n4:memory:/process_api/ec96\n" +
				"2:cpuacct:/\n1:cpu:/\n0::/\n",
			wantV1: map[string]string{"name=systemd": "/", "pids": "/", "freezer": "/",
				"memory": "/process_api/ec96", "cpuacct": "/", "cpu": "/"},
			wantUnified: "/",
			wantHasV2:   true,
		},
		{
			name:        "co-mounted cpu,cpuacct without v2",
			in:          "3:cpu,cpuacct:/system.slice/benchd.service\n2:memory:/system.slice/benchd.service\n",
			wantV1:      map[string]string{"cpu": "/system.slice/benchd.service", "cpuacct": "/system.slice/benchd.service", "memory": "/system.slice/benchd.service"},
			wantUnified: "",
			wantHasV2:   false,
		},
		{
			name:        "unified",
			in:          "0::/system.slice/benchd.service\n",
			wantV1:      map[string]string{},
			wantUnified: "/system.slice/benchd.service",
			wantHasV2:   true,
		},
		{name: "garbage", in: "memory\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseProcCgroup([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseProcCgroup error = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if !maps.Equal(got.v1, tt.wantV1) {
				t.Errorf("v1 = %v, want %v", got.v1, tt.wantV1)
			}
			if got.unified != tt.wantUnified || got.hasV2 != tt.wantHasV2 {
				t.Errorf("unified = %q (present %v), want %q (present %v)", got.unified, got.hasV2, tt.wantUnified, tt.wantHasV2)
			}
		})
	}
}

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    procMemory
		wantErr bool
	}{
		{
			name: "process",
			in:   "Name:\tpython3\nVmPeak:\t  230000 kB\nVmHWM:\t  214520 kB\nVmRSS:\t   10240 kB\nRssAnon:\t  9000 kB\n",
			want: procMemory{HWM: 214520 * 1024, RSS: 10240 * 1024},
		},
		{
			name: "kernel thread or zombie",
			in:   "Name:\tkworker/0:1\nState:\tI (idle)\nThreads:\t1\n",
			want: procMemory{},
		},
		{name: "unit is not kB", in: "VmHWM:\t  12 MB\n", wantErr: true},
		{name: "not a number", in: "VmHWM:\t  x kB\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStatus([]byte(tt.in))
			if (err != nil) != tt.wantErr {
				t.Fatalf("parseStatus error = %v, want error %v", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("parseStatus = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParsePidsAndInt(t *testing.T) {
	pids, err := parsePids([]byte("12\n345\n"))
	if err != nil || len(pids) != 2 || pids[0] != 12 || pids[1] != 345 {
		t.Errorf("parsePids = %v, %v, want [12 345], nil", pids, err)
	}
	if _, err := parsePids([]byte("12\nx\n")); err == nil {
		t.Error("parsePids accepted a non-number")
	}
	for in, want := range map[string]int64{"max\n": -1, "209715200\n": 209715200, "0": 0} {
		got, err := parseInt([]byte(in))
		if err != nil || got != want {
			t.Errorf("parseInt(%q) = %d, %v, want %d", in, got, err, want)
		}
	}
}

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"benchd-12-3", true},
		{"attempt_01.grade", true},
		{"", false},
		{".", false},
		{"..", false},
		{"a/b", false},
		{"cgroup.procs", false},
		{"memory.max", false},
		{"tasks", false},
		{"sp ace", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkName(tt.name)
			if (err == nil) != tt.ok {
				t.Errorf("checkName(%q) = %v, want ok %v", tt.name, err, tt.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("checkName(%q) = %v, want ErrInvalid", tt.name, err)
			}
		})
	}
}

func TestCPUShares(t *testing.T) {
	for weight, want := range map[uint64]uint64{1: 10, 100: 1024, 50: 512, 10000: 102400, 0: 2} {
		if got := cpuShares(weight); got != want {
			t.Errorf("cpuShares(%d) = %d, want %d", weight, got, want)
		}
	}
}
