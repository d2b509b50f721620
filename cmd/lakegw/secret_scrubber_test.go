package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestScrubberRemovesSecretsFromLogsAndErrors(t *testing.T) {
	sc := newScrubber(map[string]string{"s3.secret-access-key": `ab"c\SECRET`, "type": "rest"})
	var out bytes.Buffer
	log := zerolog.New(sc.writer(&out))
	log.Error().Err(errors.New(`signing with ab"c\SECRET failed`)).Str("type", "rest").Msg("catalog")
	if strings.Contains(out.String(), "SECRET") || !strings.Contains(out.String(), "[redacted]") {
		t.Errorf("log line: %s", out.String())
	}
	err := sc.err(errors.New(`open catalog: bad key ab"c\SECRET`))
	if strings.Contains(err.Error(), "SECRET") {
		t.Errorf("error: %v", err)
	}
	plain := errors.New("no secret here")
	if sc.err(plain) != plain {
		t.Error("an error without secrets must be returned as it is")
	}
}
