package tasks_test

import (
	"maps"
	"slices"
	"testing"

	"cads/shared/logs"
	"cads/shared/tasks"
)

// The task's copy of the archive vocabulary is the logs family's.
func TestArchiveReferencesAgreeWithTheLogs(t *testing.T) {
	if got, want := tasks.ArchiveTypes, slices.Sorted(maps.Keys(logs.ArchiveTypes)); !slices.Equal(got, want) {
		t.Fatalf("archive types %v, the logs have %v", got, want)
	}
	if tasks.MaxArchiveHours != logs.MaxPartitions {
		t.Fatalf("MaxArchiveHours %d, the logs' MaxPartitions %d", tasks.MaxArchiveHours, logs.MaxPartitions)
	}
	if logs.DefaultArchiveRetention < tasks.MinArchiveRetention || logs.DefaultArchiveRetention > tasks.MaxArchiveRetention {
		t.Fatalf("default retention %d outside %d-%d", logs.DefaultArchiveRetention, tasks.MinArchiveRetention, tasks.MaxArchiveRetention)
	}
	for _, ref := range []string{"/v2/archived-logs/applications/abc/proxy-logs", "/v2/archived-logs/applications/abc/custom"} {
		if app, typ, err := tasks.ParseArchiveReference(ref); err != nil || app != "abc" || logs.ArchiveHref(app, typ) != ref {
			t.Fatalf("%s: %s %s %v", ref, app, typ, err)
		}
	}
	for _, ref := range []string{"/v2/archived-logs/events", "/v2/archived-logs/applications/abc/access", "/v2/archived-logs/applications/ABC/cdn", "/v2/archived-logs/applications/abc/cdn/x"} {
		if _, _, err := tasks.ParseArchiveReference(ref); err == nil {
			t.Fatalf("%s accepted", ref)
		}
	}
}
