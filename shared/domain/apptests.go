package domain

import "time"

// AppTest is an application test of an account (docs/api.md#application-tests): its
// metadata, where its configuration archive is, and its last run. The
// archive is stored as uploaded, and, when the upload is not already a
// tar.bz2, also in that form (converted once, at upload, so that GET
// returns it without work). Each is a blob: chunks of AppTestChunkBytes in
// the test's partition, named by a blob id that every upload draws anew,
// so an upload never overwrites chunks a reader may be fetching.
type AppTest struct {
	Account     string `dynamodbav:"account"`
	ID          string `dynamodbav:"id"`
	Description string `dynamodbav:"description"`
	// The archive as uploaded, and its tar.bz2 form (zero ID: none, the
	// archive is one).
	MediaType      string      `dynamodbav:"media_type"`
	Filename       string      `dynamodbav:"filename"`
	Archive        AppTestBlob `dynamodbav:"archive"`
	Converted      AppTestBlob `dynamodbav:"converted"`
	ArchiveUpdated time.Time   `dynamodbav:"archive_updated"`
	// Summary is the parsed configuration's summary, as JSON (apptests
	// defines it), so that reads need not parse the archive.
	Summary string `dynamodbav:"summary"`
	// Version grows by one on every change, a run's too (the run is part of
	// the body its ETag names): changes are conditional on it.
	Version int       `dynamodbav:"version"`
	Created time.Time `dynamodbav:"created"`
	Updated time.Time `dynamodbav:"updated"`
	// The last run: its id (the load id), state, details as JSON (apptests
	// defines them), and until when (epoch ms) it counts as active, which
	// keeps a second run from starting meanwhile.
	RunID          string `dynamodbav:"run_id,omitempty"`
	RunState       string `dynamodbav:"run_state,omitempty"`
	Run            string `dynamodbav:"run,omitempty"`
	RunActiveUntil int64  `dynamodbav:"run_active_until,omitempty"`
}

// AppTestBlob locates bytes stored in chunks. Every field is always
// written (no empty maps: see dropEmpty).
type AppTestBlob struct {
	ID     string `dynamodbav:"id"`
	Chunks int    `dynamodbav:"chunks"`
	Size   int    `dynamodbav:"size"`
	SHA256 string `dynamodbav:"sha256"`
}
