package domain

import "time"

// LogItem is one stored chunk of application log records (shared/logs
// decides what a chunk holds). Chunks are partitioned by application, log
// type and hour (PK LOGS#<app>#<type>#<yyyymmddhh>) and sorted by time (SK
// <time, ms, UTC>#<id>), so a time range reads only the partitions of its
// hours, each as one key-range Query. Data is opaque here: chunks are read
// whole and never updated.
type LogItem struct {
	App  string    `dynamodbav:"-"`
	Type string    `dynamodbav:"-"`
	Time time.Time `dynamodbav:"-"`
	ID   string    `dynamodbav:"-"`
	Data string    `dynamodbav:"rec"`
	// TTL is the record's expiry (epoch seconds): DynamoDB removes it.
	TTL int64 `dynamodbav:"ttl,omitempty"`
}

// LogArchive is a prepared archive of an application's logs of one type
// over [From, To): a gzip file kept in the blob's chunk items, described
// by this header in the account's partition (docs/logs.md, Archived logs; shared/store keeps it).
type LogArchive struct {
	Account string    `dynamodbav:"account"`
	App     string    `dynamodbav:"app"`
	Type    string    `dynamodbav:"type"`
	From    time.Time `dynamodbav:"from"`
	To      time.Time `dynamodbav:"to"`
	Count   int       `dynamodbav:"count"`
	Size    int       `dynamodbav:"size"`
	Blob    string    `dynamodbav:"blob"`
	Chunks  int       `dynamodbav:"chunks"`
	Task    string    `dynamodbav:"task"`
	Created time.Time `dynamodbav:"created"`
	// Expires is when the archive stops being served (and its TTL).
	Expires int64 `dynamodbav:"ttl"`
}
