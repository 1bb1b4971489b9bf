// Package logging builds the JSON slog logger every function and the local
// platform use, so log lines have one shape everywhere.
package logging

import (
	"io"
	"log/slog"
	"strings"
)

// New returns a JSON logger writing to w at the named level (DEBUG, INFO,
// WARN, ERROR; anything else is INFO).
func New(w io.Writer, level string) *slog.Logger {
	var l slog.Level
	switch strings.ToUpper(level) {
	case "DEBUG":
		l = slog.LevelDebug
	case "WARN":
		l = slog.LevelWarn
	case "ERROR":
		l = slog.LevelError
	default:
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: l}))
}
