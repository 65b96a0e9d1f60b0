package sharedtable

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"
)

func key(s string) Key { return sha256.Sum256([]byte(s)) }

func TestTableKeepsWhatFits(t *testing.T) {
	tests := []struct {
		name      string
		limits    Limits
		sizes     []int
		wantLen   int
		wantBytes int
	}{
		{"all fit", Limits{Entries: 4, Bytes: 100, EntryBytes: 50}, []int{10, 20, 30}, 3, 60},
		{"entry over its limit is not kept", Limits{Entries: 4, Bytes: 100, EntryBytes: 50}, []int{10, 51}, 1, 10},
		{"entry count bound", Limits{Entries: 2, Bytes: 100, EntryBytes: 50}, []int{10, 10, 10, 10}, 2, 20},
		{"byte bound", Limits{Entries: 10, Bytes: 25, EntryBytes: 20}, []int{10, 10, 10}, 2, 20},
		{"entry larger than the whole table", Limits{Entries: 10, Bytes: 5, EntryBytes: 20}, []int{10}, 0, 0},
		{"no room at all", Limits{}, []int{0}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tab := New[int](tt.limits)
			for i, size := range tt.sizes {
				tab.Add(key(fmt.Sprint(i)), i, size)
			}
			if tab.Len() != tt.wantLen || tab.Bytes() != tt.wantBytes {
				t.Errorf("got %d entries, %d bytes; want %d, %d", tab.Len(), tab.Bytes(), tt.wantLen, tt.wantBytes)
			}
		})
	}
}

func TestTableGetAndReplace(t *testing.T) {
	tab := New[string](Limits{Entries: 4, Bytes: 100, EntryBytes: 100})
	if _, ok := tab.Get(key("a")); ok {
		t.Fatal("empty table returned a value")
	}
	tab.Add(key("a"), "first", 10)
	tab.Add(key("a"), "second", 30)
	if v, ok := tab.Get(key("a")); !ok || v != "second" {
		t.Errorf("Get = %q, %v; want the replacing value", v, ok)
	}
	if tab.Len() != 1 || tab.Bytes() != 30 {
		t.Errorf("replacing counted twice: %d entries, %d bytes", tab.Len(), tab.Bytes())
	}
}

// Keys are chosen by tenants: however many, the bounds hold, also under concurrent use.
func TestTableStaysBoundedUnderConcurrentUse(t *testing.T) {
	limits := Limits{Entries: 16, Bytes: 1000, EntryBytes: 200}
	tab := New[int](limits)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 500 {
				k := key(fmt.Sprint(w, i))
				tab.Add(k, i, (i*37)%250)
				tab.Get(k)
			}
		})
	}
	wg.Wait()
	if tab.Len() > limits.Entries || tab.Bytes() > limits.Bytes {
		t.Errorf("%d entries, %d bytes: over %+v", tab.Len(), tab.Bytes(), limits)
	}
}

func TestKeyInSeparatesNamespaces(t *testing.T) {
	content := []byte("template")
	if again := []byte("template"); KeyIn("a", content) != KeyIn("a", again) {
		t.Error("the same content in one namespace has two keys")
	}
	for _, other := range []Key{KeyIn("b", content), KeyIn("a", []byte("other")), KeyIn("", content), KeyIn("at", []byte("emplate"))} {
		if other == KeyIn("a", content) {
			t.Errorf("two different namespace and content pairs share the key %x", other)
		}
	}
}
