// Package taskworkerwire wires the task worker (functions/task-worker).
package taskworkerwire

import (
	"context"
	"errors"
	"fmt"
	"time"

	"cads/shared/domain"
	"cads/shared/logs"
	"cads/shared/outbox"
	"cads/shared/tasks"
	"cads/shared/wire"
)

// FromEnv reads the task worker's dependencies from the environment, with
// the SQS client for every queue the outbox sweep sends to (wire.TasksQueue,
// wire.MetricsQueue, wire.NotificationsQueue, wire.TestRunsQueue).
func FromEnv(ctx context.Context) (wire.Deps, error) { return wire.FromEnv(ctx, wire.WithSQS) }

// Handler is the task queue's handler as deployed: run-action calls may
// reach public addresses only.
func Handler(d wire.Deps) tasks.SQSHandler {
	return worker(d, tasks.PublicOnly)
}

// Local is the task worker of the local platform: run-action calls may
// reach loopback addresses only (the developer's machine).
func Local(d wire.Deps) tasks.SQSHandler {
	return worker(d, tasks.LoopbackOnly)
}

// worker sweeps the outbox of every kind at the start of each invocation
// (its scheduled invocation, every minute, only sweeps): the one sweep of
// the deployment.
func worker(d wire.Deps, policy tasks.DialPolicy) tasks.SQSHandler {
	sweep := outbox.New(d.Store.Tasks, outbox.SQS{Client: d.SQS, URLs: d.QueueURLs}, d.Log)
	w := tasks.NewWorker(tasks.NewWorkerStore(d.Store), tasks.NewFakeDataPlane(d.Log, policy), sweep, d.Log)
	w.Archives = Archives(d.Store.Logs)
	return w.Handle
}

// Archives plugs the logs family's archives into the worker: a range the
// logs refuse fails the task, naming the limit.
func Archives(st logs.ArchiveStore) tasks.Archiver { return archiver{logs.NewArchiver(st)} }

type archiver struct{ a *logs.Archiver }

func (x archiver) PrepareArchive(ctx context.Context, r tasks.ArchiveRequest) (tasks.ArchiveResult, error) {
	a, err := x.a.Prepare(ctx, logs.ArchiveRequest{Account: r.Account, App: r.App, ArchiveType: r.ArchiveType, From: r.From, To: r.To,
		RetentionDays: r.RetentionDays, Task: r.Task})
	var bq *logs.BadQuery
	if errors.As(err, &bq) {
		return tasks.ArchiveResult{}, tasks.Permanent(bq.Msg)
	}
	if err != nil {
		return tasks.ArchiveResult{}, err
	}
	return tasks.ArchiveResult{
		Message: fmt.Sprintf("archive of %d records (%d bytes) ready until %s", a.Count, a.Size, time.Unix(a.Expires, 0).UTC().Format(time.RFC3339)),
		Result:  logs.ArchivedLogs([]domain.LogArchive{a})[0],
	}, nil
}
