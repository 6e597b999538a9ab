package main

import (
	"fmt"
	"strconv"
	"strings"
)

// sizeFlag is a flag of a number of bytes: an integer with an optional
// binary unit (K, M, G, T, with or without "iB"; 10G is 10 GiB), or
// "off" (stored as off).
type sizeFlag struct {
	n   int64
	off int64 // what "off" means
}

func (f *sizeFlag) String() string {
	if f == nil {
		return ""
	}
	if f.n == f.off {
		return "off"
	}
	return strconv.FormatInt(f.n, 10)
}

// units are the binary units a size may end in.
var units = []struct {
	suffix string
	shift  uint
}{{"T", 40}, {"G", 30}, {"M", 20}, {"K", 10}}

func (f *sizeFlag) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	if n < 0 {
		f.n = f.off
	} else {
		f.n = n
	}
	return nil
}

// parseSize parses a size as sizeFlag takes it; "off" is -1.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	if strings.EqualFold(t, "off") {
		return -1, nil
	}
	upper := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(t), "B"), "I")
	shift := uint(0)
	for _, u := range units {
		if strings.HasSuffix(upper, u.suffix) {
			upper, shift = strings.TrimSuffix(upper, u.suffix), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(upper), 10, 64)
	if err != nil || n < 0 || (shift > 0 && n > (1<<62)>>shift) {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit (K, M, G, T) or off", s)
	}
	return n << shift, nil
}
