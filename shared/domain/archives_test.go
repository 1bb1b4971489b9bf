package domain

import "testing"

func TestParseArchiveReference(t *testing.T) {
	for _, at := range ArchiveTypeNames() {
		ref := ArchiveHref("abc", at)
		if app, typ, err := ParseArchiveReference(ref); err != nil || app != "abc" || typ != at {
			t.Errorf("%s: %q %q %v", ref, app, typ, err)
		}
	}
	for _, ref := range []string{"", "/v2/archived-logs/applications/abc/events", "/v2/archived-logs/applications/ABC/cdn", "/v2/archived-logs/applications/abc/cdn/x"} {
		if _, _, err := ParseArchiveReference(ref); err == nil {
			t.Errorf("%q parsed", ref)
		}
	}
	if ArchiveTypeOf("access") != "proxy-logs" || ArchiveTypeOf("cdn") != "cdn" {
		t.Error("ArchiveTypeOf does not invert ArchiveTypes")
	}
}
