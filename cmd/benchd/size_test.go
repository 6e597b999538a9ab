package main

import "testing"

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"0", 0, false},
		{"4096", 4096, false},
		{"10G", 10 << 30, false},
		{"10GiB", 10 << 30, false},
		{"512m", 512 << 20, false},
		{"1T", 1 << 40, false},
		{"3KB", 3 << 10, false},
		{"off", -1, false},
		{"OFF", -1, false},
		{"", 0, true},
		{"-5G", 0, true},
		{"1.5G", 0, true},
		{"10X", 0, true},
		{"G", 0, true},
		{"99999999999T", 0, true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseSize(tc.in)
			if (err != nil) != tc.wantErr || (!tc.wantErr && got != tc.want) {
				t.Errorf("got %d, %v; want %d (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
