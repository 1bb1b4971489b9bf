package appconfig_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"cads/shared/applications/appconfig"
)

func TestDecodeDefaultsAndChanges(t *testing.T) {
	c, err := appconfig.Decode([]byte(`{"name":"Shop","aliases":["WWW.Example.com"],"tls_configuration":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.RequestTimeout != 30 || c.TranslatePath != "preserve" || c.Aliases[0] != "www.example.com" || !*c.TLS.EnableServerValidation {
		t.Fatalf("defaults: %+v", c)
	}
	next := c
	next.Name, next.Labels = "Shop 2", []string{"prod"}
	if ch := appconfig.Changed(c, next); !slices.Equal(ch, []string{"labels", "name"}) || !appconfig.OnlyDescriptive(ch) {
		t.Fatalf("descriptive change: %v", ch)
	}
	limit := 10
	next.ConcurrentLimit = &limit
	ch := appconfig.Changed(c, next)
	if !slices.Equal(ch, []string{"concurrent_limit", "labels", "name"}) || appconfig.OnlyDescriptive(ch) {
		t.Fatalf("run-affecting change: %v", ch)
	}
	// Apply replays the changes onto whatever the configuration is by then.
	later := c
	later.Protection = "maximum"
	got, err := appconfig.Apply(later, appconfig.ChangesOf(next, ch))
	if err != nil || got.Name != "Shop 2" || *got.ConcurrentLimit != 10 || got.Protection != "maximum" {
		t.Fatalf("apply: %+v, %v", got, err)
	}
	// null: back to the default.
	back, err := appconfig.Apply(got, appconfig.Changes{"concurrent_limit": json.RawMessage("null"), "request_timeout": json.RawMessage("null")})
	if err != nil || back.ConcurrentLimit != nil || back.RequestTimeout != 30 {
		t.Fatalf("apply null: %+v, %v", back, err)
	}
	if _, err := appconfig.Apply(got, appconfig.Changes{"aliases": json.RawMessage(`[]`)}); err == nil || !strings.Contains(err.Error(), "aliases") {
		t.Fatalf("invalid changes: %v", err)
	}
	// Stored form round trip.
	parsed, err := appconfig.Parse(got.Encode())
	if err != nil || len(appconfig.Changed(got, parsed)) != 0 {
		t.Fatalf("round trip: %v %v", err, appconfig.Changed(got, parsed))
	}
}
