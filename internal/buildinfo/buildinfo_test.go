package buildinfo

import (
	"regexp"
	"strings"
	"testing"
)

func TestLine(t *testing.T) {
	if got := Line("benchd", "v1.2.3"); !regexp.MustCompile(`^benchd v1\.2\.3 go1\.\d+\S*\n$`).MatchString(got) {
		t.Errorf("set: got %q, want \"benchd v1.2.3 goVERSION\"", got)
	}
	got := Line("benchctl", "")
	if !strings.HasPrefix(got, "benchctl ") || strings.HasPrefix(got, "benchctl  ") || !strings.Contains(got, " go1.") {
		t.Errorf("unset: got %q, want the build's own version", got)
	}
}
