// Package taskworkerwire wires the task worker (functions/task-worker).
package taskworkerwire

import (
	"context"

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
	sweep := outbox.New(d.Store, outbox.SQS{Client: d.SQS, URLs: d.QueueURLs}, d.Log)
	w := tasks.NewWorker(d.Store, tasks.NewFakeDataPlane(d.Log, policy), sweep, d.Log)
	w.Archives = logs.NewArchiver(d.Store)
	return w.Handle
}
