package lake

import (
	"slices"
	"strings"
	"testing"
)

func TestRedactHidesSecretsAndURLPasswords(t *testing.T) {
	props := map[string]string{
		"type":                 "rest",
		"uri":                  "https://alice:hunter2pw@catalog.example/api",
		"warehouse":            "s3://bucket/wh",
		"s3.secret-access-key": "AKIASECRETVALUE",
		"s3.access-key-id":     "AKIAID",
		"s3.session-token":     "tok-123456",
		"credential":           "client:secret",
		"header.X-Api-Key":     "k",
	}
	red := RedactedProps(props)
	for _, k := range []string{"s3.secret-access-key", "s3.access-key-id", "s3.session-token", "credential", "header.X-Api-Key"} {
		if red[k] != Redacted {
			t.Errorf("%s shown as %q", k, red[k])
		}
	}
	if red["type"] != "rest" || red["warehouse"] != "s3://bucket/wh" {
		t.Errorf("plain props changed: %v", red)
	}
	if strings.Contains(red["uri"], "hunter2pw") || !strings.Contains(red["uri"], "catalog.example") {
		t.Errorf("uri shown as %q", red["uri"])
	}
	got := SecretValues(props)
	slices.Sort(got)
	want := []string{"AKIAID", "AKIASECRETVALUE", "client:secret", "hunter2pw", "tok-123456"}
	if !slices.Equal(got, want) {
		t.Errorf("SecretValues = %q, want %q (values under 4 bytes are not scrubbed)", got, want)
	}
}
