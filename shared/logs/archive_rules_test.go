package logs

import (
	"testing"

	"cads/shared/domain"
)

// The archive rules are the domain's (the tasks function validates requests
// with them without linking this package); they must name log types this
// package knows and ranges its queries can read.
func TestArchiveRulesFitTheLogs(t *testing.T) {
	for at, typ := range domain.ArchiveTypes {
		if _, ok := schemas[typ]; !ok {
			t.Errorf("archive type %q holds log type %q, which has no schema", at, typ)
		}
	}
	if domain.MaxArchiveHours > MaxPartitions {
		t.Errorf("an archive may cover %d hours, a query reads at most %d partitions", domain.MaxArchiveHours, MaxPartitions)
	}
	if d := domain.DefaultArchiveRetention; d < domain.MinArchiveRetention || d > domain.MaxArchiveRetention {
		t.Errorf("default retention %d outside %d-%d", d, domain.MinArchiveRetention, domain.MaxArchiveRetention)
	}
}
