package admissionjson

import (
	"bytes"
)

// The scanners below find a member of a raw JSON object or an element of a raw array
// without decoding the document: the defaulting patch only needs to know which keys the
// request has. The input is what the API server sent, so it is valid JSON; anything they
// cannot read is reported as not ok.

// walkMembers reads the object starting at b[i] (a '{', after optional space) and calls
// visit with each member's key as written (quotes and escapes included) and the index where
// its value starts; visit reads or skips the value and returns the index just past it,
// whether to go on, and whether the value could be read. end is the index just past the
// object's closing brace (or past the last value read, when visit stopped early).
func walkMembers(b []byte, i int, visit func(quotedKey []byte, valStart int) (valEnd int, more, ok bool)) (end int, ok bool) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, false
	}
	i++
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case '}':
			return i + 1, true
		case ',':
			i++
			continue
		case '"':
		default:
			return 0, false
		}
		keyEnd, ok := skipString(b, i)
		if !ok {
			return 0, false
		}
		key := b[i:keyEnd]
		i = skipSpace(b, keyEnd)
		if i >= len(b) || b[i] != ':' {
			return 0, false
		}
		valEnd, more, ok := visit(key, skipSpace(b, i+1))
		if !ok {
			return 0, false
		}
		if !more {
			return valEnd, true
		}
		i = valEnd
	}
}

// eachMember calls fn with each member of the object obj (which starts with '{', after
// optional space) in order, until fn returns false. quotedKey is the key as written, quotes
// and escapes included. ok is false if the object cannot be read; end is the index just past
// its closing brace (or past the last value read, when fn stopped early).
func eachMember(obj []byte, fn func(quotedKey, val []byte) bool) (end int, ok bool) {
	return walkMembers(obj, 0, func(key []byte, start int) (int, bool, bool) {
		end, ok := skipValue(obj, start)
		if !ok {
			return 0, false, false
		}
		return end, fn(key, obj[start:end]), true
	})
}

// walkElements reads the array starting at b[i] (a '[', after optional space) and calls
// visit with each element's index and the index where it starts; visit reads or skips the
// element and returns the index just past it, whether to go on, and whether it could be
// read. end is the index just past the closing bracket (or past the last element read, when
// visit stopped early).
func walkElements(b []byte, i int, visit func(idx, start int) (end int, more, ok bool)) (end int, ok bool) {
	i = skipSpace(b, i)
	if i >= len(b) || b[i] != '[' {
		return 0, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for idx := 0; ; idx++ {
		end, more, ok := visit(idx, skipSpace(b, i))
		if !ok {
			return 0, false
		}
		if !more {
			return end, true
		}
		i = skipSpace(b, end)
		if i >= len(b) {
			return 0, false
		}
		switch b[i] {
		case ']':
			return i + 1, true
		case ',':
			i++
		default:
			return 0, false
		}
	}
}

// eachElement calls fn with each element of the array arr (which starts with '[', after
// optional space) in order, until fn returns false. ok is false if the array cannot be read.
func eachElement(arr []byte, fn func(i int, val []byte) bool) bool {
	_, ok := walkElements(arr, 0, func(idx, start int) (int, bool, bool) {
		end, ok := skipValue(arr, start)
		if !ok {
			return 0, false, false
		}
		return end, fn(idx, arr[start:end]), true
	})
	return ok
}

// keyIs reports whether the quoted key decodes to want; ok is false if it cannot be decoded.
func keyIs(quotedKey []byte, want string) (is, ok bool) {
	if plain := quotedKey[1 : len(quotedKey)-1]; bytes.IndexByte(plain, '\\') < 0 {
		return string(plain) == want, true // compared without a copy
	}
	key, ok := decodeKey(quotedKey)
	return ok && key == want, ok
}

// namedMembers reads the object starting at b[start] (a '{', after optional space), hands the
// value of each member named in keys (at most 64) to read, with the key's index in keys, and
// skips the others; read returns the index just past the value. ok is false unless the object
// can be read, every key in it is a plain string (no escapes, so none can decode to one of
// keys unseen) and none of keys appears twice: a decoder merges the values of a repeated key,
// so a single value would not be what it decodes.
func namedMembers(b []byte, start int, keys []string, read func(which, at int) (end int, ok bool)) (end int, ok bool) {
	var seen uint64
	return walkMembers(b, start, func(key []byte, at int) (int, bool, bool) {
		if bytes.IndexByte(key, '\\') >= 0 {
			return 0, false, false
		}
		for which, k := range keys {
			if string(key[1:len(key)-1]) != k {
				continue
			}
			if seen&(1<<which) != 0 {
				return 0, false, false
			}
			seen |= 1 << which
			end, ok := read(which, at)
			return end, true, ok
		}
		end, ok := skipValue(b, at)
		return end, true, ok
	})
}

// uniqueMembers returns the raw values of keys in the object obj (nil for a key it does not
// have), under the conditions of namedMembers.
func uniqueMembers(obj []byte, keys ...string) (vals [][]byte, end int, ok bool) {
	vals = make([][]byte, len(keys))
	end, ok = namedMembers(obj, 0, keys, func(which, at int) (int, bool) {
		end, ok := skipValue(obj, at)
		if ok {
			vals[which] = obj[at:end]
		}
		return end, ok
	})
	if !ok {
		return nil, 0, false
	}
	return vals, end, true
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
		// Strings are most of an object's bytes: find the next quote at memory speed, then
		// see whether an odd number of backslashes escapes it.
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, false
		}
		j += k
		escapes := 0
		for p := j - 1; p > i && b[p] == '\\'; p-- {
			escapes++
		}
		if escapes%2 == 0 {
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
