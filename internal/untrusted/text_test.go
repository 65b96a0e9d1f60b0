package untrusted

import "testing"

func TestText(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		limit    int
		want     string
	}{
		{"kept as it is", "HTTPRoute accepted", 64, "HTTPRoute accepted"},
		{"white space and control characters become one space", "\tnot\x00 \r\nallowed\x1b ", 64, "not allowed"},
		{"invalid UTF-8 is replaced", "ok\xc3", 64, "ok?"},
		{"a bidirectional override is dropped", "\u202egnirts", 64, "gnirts"},
		{"cut at the limit, in runes", "ééééé", 3, "ééé…"},
		{"trailing space left after the cut is no cut", "abc   ", 3, "abc"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in, tc.limit); got != tc.want {
				t.Errorf("Text(%q, %d) = %q, want %q", tc.in, tc.limit, got, tc.want)
			}
		})
	}
}
