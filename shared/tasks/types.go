// Package tasks runs operations on applications asynchronously: the tasks
// API (POST/GET /v2/tasks), the outbox that hands a written task to the
// queue without ever losing it, the queue-triggered worker that moves
// applications through their states, and the data-plane driver interface
// through which tasks act outside the table. docs/tasks.md describes the
// state machine, the outbox and the driver.
package tasks

import (
	"cads/shared/domain"
	"encoding/json"
	"net/http"
	"regexp"
	"time"
)

// QueueID is the logical id of the task queue (template.yaml), where the
// outbox sends task messages.
const QueueID = "TasksQueue"

// Task types. All but patch-application are accepted by POST /v2/tasks;
// patch-application is created by PATCH /v2/applications/{id}.
const (
	TypeStart                     = "start"
	TypeStop                      = "stop"
	TypeEnterMaintenance          = "enter_maintenance"
	TypeExitMaintenance           = "exit_maintenance"
	TypeRunAction                 = "run-action"
	TypeGenerateOriginCertificate = "generate-origin-certificate"
	TypeInvalidateCache           = "invalidate-cache"
	TypePatchApplication          = "patch-application"
	TypePrepareForDownload        = "prepare-for-download"
)

// PostTypes are the types POST /v2/tasks accepts, in the order the API publishes them.
var PostTypes = []string{TypeEnterMaintenance, TypeExitMaintenance, TypeRunAction, TypeStart, TypeStop, TypeGenerateOriginCertificate, TypeInvalidateCache, TypePrepareForDownload}

// Permission is docs/api.md#tasks: the method a caller needs on
// /v2/applications/{id}, besides POST /v2/tasks, to run each task type
// (prepare-for-download: on the archive's reference, PermissionPath).
var Permission = map[string]string{
	TypeEnterMaintenance:          http.MethodPatch,
	TypeExitMaintenance:           http.MethodPatch,
	TypeRunAction:                 http.MethodPatch,
	TypeStart:                     http.MethodPatch,
	TypeStop:                      http.MethodPatch,
	TypeGenerateOriginCertificate: http.MethodGet,
	TypeInvalidateCache:           http.MethodPut,
	TypePrepareForDownload:        http.MethodGet,
}

// PermissionPath is the path Permission[r.Type] is decided on: the
// archive's reference for prepare-for-download (reading the archive is
// what the task is for), else the target application.
func PermissionPath(r Request) string {
	if p, ok := r.Params.(PrepareParams); ok {
		return p.Reference
	}
	return AppHref(r.App)
}

// Lifecycle is the state change a lifecycle task makes: from one of From,
// through Via (held while the data plane is told), to To.
type Lifecycle struct {
	From    []string
	Via, To string
}

// Lifecycles is the application state machine (docs/tasks.md). Every other
// state refuses the task, which fails with a message naming both.
var Lifecycles = map[string]Lifecycle{
	TypeStart:            {From: []string{domain.AppStopped}, Via: domain.AppStarting, To: domain.AppRunning},
	TypeStop:             {From: []string{domain.AppRunning, domain.AppMaintenance}, Via: domain.AppStopping, To: domain.AppStopped},
	TypeEnterMaintenance: {From: []string{domain.AppRunning}, Via: domain.AppEnteringMaintenance, To: domain.AppMaintenance},
	TypeExitMaintenance:  {From: []string{domain.AppMaintenance}, Via: domain.AppExitingMaintenance, To: domain.AppRunning},
}

// AppStates are all application states.
var AppStates = []string{domain.AppStopped, domain.AppStarting, domain.AppRunning, domain.AppStopping,
	domain.AppMaintenance, domain.AppEnteringMaintenance, domain.AppExitingMaintenance}

// Task is the wire shape of a task.
type Task struct {
	ID         string          `json:"id"`
	Href       string          `json:"href"`
	Type       string          `json:"type"`
	Target     string          `json:"target,omitempty"`
	Parameters json.RawMessage `json:"parameters"`
	State      string          `json:"state"`
	Message    string          `json:"message"`
	Result     json.RawMessage `json:"result,omitempty"`
	Created    time.Time       `json:"created"`
	Started    *time.Time      `json:"started,omitempty"`
	Completed  *time.Time      `json:"completed,omitempty"`
	Updated    time.Time       `json:"updated"`
}

// Out renders a stored task.
func Out(t domain.Task) Task {
	params := json.RawMessage(t.Parameters)
	if len(params) == 0 {
		params = json.RawMessage("{}")
	}
	out := Task{ID: t.ID, Href: Href(t.ID), Type: t.Type, Target: t.Target, Parameters: params, State: t.State,
		Message: t.Message, Created: t.Created, Started: t.Started, Completed: t.Completed, Updated: t.Updated}
	if t.Result != "" {
		out.Result = json.RawMessage(t.Result)
	}
	if out.Message == "" && t.State == domain.TaskPending {
		out.Message = "queued"
	}
	if out.Message == "" && t.State == domain.TaskRunning && t.LastError != "" {
		out.Message = "retrying after: " + t.LastError
	}
	return out
}

// Href is a task's href.
func Href(id string) string { return "/v2/tasks/" + id }

// AppHref is an application's href.
func AppHref(id string) string { return "/v2/applications/" + id }

var appHrefRE = regexp.MustCompile(`^/v2/applications/([a-z0-9]{1,64})$`)

// AppIDOf returns the application id of an application href.
func AppIDOf(href string) (string, bool) {
	m := appHrefRE.FindStringSubmatch(href)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// message is what a task's queue message carries: only the id, so the
// message can be re-sent any number of times and the table stays the only
// source of truth.
type message struct {
	Task string `json:"task"`
}
