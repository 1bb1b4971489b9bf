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
