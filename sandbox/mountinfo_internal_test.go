package sandbox

import (
	"reflect"
	"strings"
	"testing"
)

const fakeMountinfo = `27 1 254:0 / / rw,relatime - ext4 /dev/vda rw
22 27 0:21 / /proc rw,relatime - proc proc rw
42 27 254:0 /var/lib/benchd/state /srv/alias rw,relatime - ext4 /dev/vda rw
43 27 0:54 / /var/lib/benchd/views/v1 rw,nosuid - fuse.benchd /x rw
44 27 254:0 /home/a\040b /mnt/with\040space rw - ext4 /dev/vda rw
100 27 0:42 / /tmp rw - tmpfs sandbox rw
101 100 254:0 /var /tmp/var ro - ext4 /dev/vda rw
102 100 254:0 /srv /tmp/srv ro - ext4 /dev/vda rw
103 102 254:0 /var/lib/benchd/state /tmp/srv/alias ro - ext4 /dev/vda rw
104 100 254:0 /var/lib/benchd/state/sub /tmp/data ro - ext4 /dev/vda rw
105 100 254:0 /usr /tmp/usr ro - ext4 /dev/vda rw
`

func TestParseMountinfo(t *testing.T) {
	ms, err := parseMountinfo(strings.NewReader(fakeMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 11 {
		t.Fatalf("got %d mounts, want 11", len(ms))
	}
	if got, want := ms[4], (mount{Dev: "254:0", Root: "/home/a b", Point: "/mnt/with space", FSType: "ext4"}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if _, err := parseMountinfo(strings.NewReader("1 2 3\n")); err == nil {
		t.Error("a malformed line parsed")
	}
}

func TestIdentifyAndExposures(t *testing.T) {
	ms, err := parseMountinfo(strings.NewReader(fakeMountinfo))
	if err != nil {
		t.Fatal(err)
	}
	host := ms[:5] // what the parent sees
	tests := []struct {
		name    string
		path    string
		wantID  identity
		wantExp []string
	}{
		{"state dir: under /var, an alias of the host, and a bind of a part",
			"/var/lib/benchd/state", identity{"254:0", "/var/lib/benchd/state"},
			[]string{"/tmp/var/lib/benchd/state", "/tmp/srv/alias", "/tmp/data"}},
		{"a file in a FUSE view", "/var/lib/benchd/views/v1/f", identity{"0:54", "/f"}, nil},
		{"a usr file", "/usr/share/x", identity{"254:0", "/usr/share/x"}, []string{"/tmp/usr/share/x"}},
		{"not exposed", "/opt/x", identity{"254:0", "/opt/x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, ok := identify(host, tt.path)
			if !ok || id != tt.wantID {
				t.Fatalf("identify(%s): got %+v %v, want %+v", tt.path, id, ok, tt.wantID)
			}
			if got := exposures(ms, id, "/tmp"); !reflect.DeepEqual(got, tt.wantExp) {
				t.Errorf("exposures: got %q, want %q", got, tt.wantExp)
			}
		})
	}
}
