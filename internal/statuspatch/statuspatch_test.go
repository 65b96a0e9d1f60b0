package statuspatch

import "testing"

func TestBody(t *testing.T) {
	for _, tt := range []struct {
		name   string
		status any
		want   string
	}{
		{"a struct", struct {
			State string `json:"state,omitempty"`
			N     int    `json:"n"`
		}{State: "ready"}, `[{"op":"add","path":"/status","value":{"state":"ready","n":0}}]`},
		{"an empty status still replaces the stored one", struct {
			State string `json:"state,omitempty"`
		}{}, `[{"op":"add","path":"/status","value":{}}]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Body(tt.status)
			if err != nil || string(got) != tt.want {
				t.Errorf("Body = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}
