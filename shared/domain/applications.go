package domain

import "time"

// Application states (docs/api.md#applications). The three -ing states and
// entering/exiting_maintenance are transitional: a task holds them.
const (
	AppStopped             = "stopped"
	AppStarting            = "starting"
	AppRunning             = "running"
	AppStopping            = "stopping"
	AppMaintenance         = "maintenance"
	AppEnteringMaintenance = "entering_maintenance"
	AppExitingMaintenance  = "exiting_maintenance"
)

// Application is an application of an account. Its configuration is kept
// as the JSON document shared/applications/appconfig defines, so the store
// does not depend on the configuration's shape.
//
// The item is written whole only when it is created; every later change is
// an UpdateItem of named attributes, so the page-control sequence and the
// state (written by tasks) never race with configuration edits.
type Application struct {
	ID      string `dynamodbav:"id"`
	Account string `dynamodbav:"account"`
	State   string `dynamodbav:"state"`
	Config  string `dynamodbav:"config"`
	// Aliases are the configuration's host names, kept beside it so the
	// store can claim each (aliases.go) in the transactions that write the
	// application without reading the configuration's shape. Callers set
	// them from the configuration they write.
	Aliases []string `dynamodbav:"aliases,omitempty"`
	// Version grows by one on every configuration change; configuration
	// writes are conditional on it (optimistic locking).
	Version int `dynamodbav:"version"`
	// TransitionTask is the task holding a transitional state, and
	// TransitionFrom the state it started from (restored if it fails).
	TransitionTask string `dynamodbav:"transition_task,omitempty"`
	TransitionFrom string `dynamodbav:"transition_from,omitempty"`
	// StateTask is the task whose success brought the application into
	// its current state (a failed task that restores a state leaves it),
	// so a scheduled end of a maintenance ends only the one it was
	// scheduled for (docs/tasks.md#scheduled-end-of-a-maintenance).
	StateTask      string    `dynamodbav:"state_task,omitempty"`
	PageControlSeq int       `dynamodbav:"pagecontrol_seq,omitempty"`
	Created        time.Time `dynamodbav:"created"`
	Updated        time.Time `dynamodbav:"updated"`
}
