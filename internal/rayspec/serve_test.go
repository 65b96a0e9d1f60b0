package rayspec

import "testing"

func TestServeAppName(t *testing.T) {
	for stated, want := range map[string]string{"": "default", "fruit": "fruit", "default": "default", " ": " "} {
		if got := ServeAppName(stated); got != want {
			t.Errorf("ServeAppName(%q) = %q, want %q", stated, got, want)
		}
	}
}
