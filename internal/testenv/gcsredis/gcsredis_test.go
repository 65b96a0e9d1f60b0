package gcsredis

import "testing"

func TestWriteAndDeleteNamespace(t *testing.T) {
	s, err := Start("secret")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Dial(s.Addr(), "", "wrong"); err == nil {
		t.Fatal("a wrong password was accepted")
	}
	c, err := Dial("redis://"+s.Addr(), "", "secret")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, ns := range []string{"a", "b"} {
		if err := c.WriteGCSTables(ns); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := c.DeleteNamespace("a"); err != nil || n != 4 {
		t.Fatalf("deleted %d, %v", n, err)
	}
	if keys, _ := c.Keys("a"); len(keys) != 0 {
		t.Errorf("left: %v", keys)
	}
	if keys, _ := c.Keys("b"); len(keys) != 4 {
		t.Errorf("other namespace touched: %v", keys)
	}
}
