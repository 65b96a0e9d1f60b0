package webhooks

import (
	"bytes"
	"encoding/json"
)

// The scanners below find a member of a raw JSON object or an element of a raw array
// without decoding the document: the defaulting patch only needs to know which keys the
// request has. The input is what the API server sent, so it is valid JSON; anything they
// cannot read is reported as not ok.

// rawMember returns the raw value of key in the object obj (which starts with '{').
func rawMember(obj []byte, key string) (val []byte, found, ok bool) {
	i := 1
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) {
			return nil, false, false
		}
		switch obj[i] {
		case '}':
			return nil, false, true
		case ',':
			i++
			continue
		case '"':
		default:
			return nil, false, false
		}
		end, ok := skipString(obj, i)
		if !ok {
			return nil, false, false
		}
		k := obj[i+1 : end-1]
		match := string(k) == key
		if bytes.IndexByte(k, '\\') >= 0 {
			var s string
			if json.Unmarshal(obj[i:end], &s) != nil {
				return nil, false, false
			}
			match = s == key
		}
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false, false
		}
		start := skipSpace(obj, i+1)
		end, ok = skipValue(obj, start)
		if !ok {
			return nil, false, false
		}
		if match {
			return obj[start:end], true, true
		}
		i = end
	}
}

// rawElement returns the raw n-th element of the array arr (which starts with '[').
func rawElement(arr []byte, n int) (val []byte, ok bool) {
	if n < 0 {
		return nil, false
	}
	i := 1
	for idx := 0; ; idx++ {
		i = skipSpace(arr, i)
		if i >= len(arr) || arr[i] == ']' {
			return nil, false
		}
		end, ok := skipValue(arr, i)
		if !ok {
			return nil, false
		}
		if idx == n {
			return arr[i:end], true
		}
		i = skipSpace(arr, end)
		if i >= len(arr) || arr[i] != ',' {
			return nil, false
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, bool) {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end, ok := skipString(b, j)
				if !ok {
					return 0, false
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1, true
				}
			}
		}
		return 0, false
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	return j, j > i
}
