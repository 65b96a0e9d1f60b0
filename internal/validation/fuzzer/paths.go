package fuzzer

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
)

// ChangedPaths lists the field paths (in field.Path syntax, e.g.
// spec.workerGroupSpecs[0].numOfHosts) at which after differs from before, comparing their
// JSON forms. A value that appears or disappears is one path, not one per leaf.
func ChangedPaths(before, after any) ([]string, error) {
	var b, a any
	for _, x := range []struct {
		in  any
		out *any
	}{{before, &b}, {after, &a}} {
		raw, err := json.Marshal(x.in)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(raw, x.out); err != nil {
			return nil, err
		}
	}
	var paths []string
	diff("", b, a, &paths)
	slices.Sort(paths)
	return paths, nil
}

func diff(path string, b, a any, out *[]string) {
	bm, bok := b.(map[string]any)
	am, aok := a.(map[string]any)
	if bok && aok {
		for k := range union(bm, am) {
			diff(join(path, k), bm[k], am[k], out)
		}
		return
	}
	bl, bok := b.([]any)
	al, aok := a.([]any)
	if bok && aok && len(bl) == len(al) {
		for i := range bl {
			diff(fmt.Sprintf("%s[%d]", path, i), bl[i], al[i], out)
		}
		return
	}
	if !reflect.DeepEqual(b, a) {
		*out = append(*out, path)
	}
}

func union(a, b map[string]any) map[string]bool {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}
