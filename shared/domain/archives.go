package domain

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Archived logs (docs/logs.md, Archived logs): a prepare-for-download task
// writes a gzip file of an application's records of one type over a range
// of whole hours, referenced as /v2/archived-logs/applications/<app>/<type>.
// The rules live here because two families apply them: tasks validates the
// request, logs writes, lists and serves the archives.
const (
	// MaxArchiveHours is the longest range one archive covers: a month of
	// hourly log partitions, the most one log query reads.
	MaxArchiveHours = 31 * 24
	// Archive retention in days: the default, and the allowed range.
	DefaultArchiveRetention = 3
	MinArchiveRetention     = 3
	MaxArchiveRetention     = 30
)

// ArchiveTypes maps the archive types of a reference to the log types they
// hold: access records are the proxy logs.
var ArchiveTypes = map[string]string{
	"proxy-logs":  "access",
	"cdn":         "cdn",
	"csp-reports": "csp-reports",
	"custom":      "custom",
	"pageviews":   "pageviews",
}

// ArchiveTypeNames are the archive types, sorted.
func ArchiveTypeNames() []string { return slices.Sorted(maps.Keys(ArchiveTypes)) }

// ArchiveTypeOf is the archive type of a log type.
func ArchiveTypeOf(logType string) string {
	for k, v := range ArchiveTypes {
		if v == logType {
			return k
		}
	}
	return logType
}

// ArchiveHref is the reference of an application's archives of a type.
func ArchiveHref(app, archiveType string) string {
	return "/v2/archived-logs/applications/" + app + "/" + archiveType
}

var archiveRefRE = regexp.MustCompile(`^/v2/archived-logs/applications/([a-z0-9]{1,64})/([a-z-]+)$`)

// ParseArchiveReference reads an archive reference: the application id and
// the archive type, or an error whose text is fit for a 400.
func ParseArchiveReference(ref string) (app, archiveType string, err error) {
	m := archiveRefRE.FindStringSubmatch(ref)
	if m == nil {
		if len(ref) > 100 {
			ref = strings.ToValidUTF8(ref[:100], "") + "…"
		}
		return "", "", fmt.Errorf("reference %q is not an archived-logs reference like %s", ref, ArchiveHref("<id>", "proxy-logs"))
	}
	if _, ok := ArchiveTypes[m[2]]; !ok {
		return "", "", fmt.Errorf("reference: %q is not an archive type; use one of %s", m[2], strings.Join(ArchiveTypeNames(), ", "))
	}
	return m[1], m[2], nil
}
