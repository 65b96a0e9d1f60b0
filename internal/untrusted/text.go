// Package untrusted makes text that raygate did not write (a Ray dashboard's answer, a
// Gateway controller's condition, a tenant-writable status) safe to quote in a condition or
// an event. It is pure: the RayService plan, which must not import a client, uses it too.
package untrusted

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text makes remote text safe to show: valid UTF-8, control characters and runs of white
// space turned into single spaces, cut to at most limit runes with "…" marking the cut.
func Text(s string, limit int) string {
	var b strings.Builder
	n, space := 0, false
	for len(s) > 0 && n < limit {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		if r == utf8.RuneError && size <= 1 {
			r = '?'
		}
		if unicode.IsSpace(r) || unicode.IsControl(r) || !unicode.IsPrint(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
			n++
		}
		space = false
		b.WriteRune(r)
		n++
	}
	if strings.TrimSpace(s) != "" {
		b.WriteString("…")
	}
	return b.String()
}
