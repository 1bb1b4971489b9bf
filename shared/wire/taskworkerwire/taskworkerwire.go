// Package taskworkerwire wires the task worker (functions/task-worker).
package taskworkerwire

import (
	"context"

	"cads/shared/tasks"
	"cads/shared/wire"
	"cads/shared/wire/taskswire"
)

// FromEnv reads the task worker's dependencies from the environment, with
// the SQS client for wire.TasksQueue (the outbox sweep re-sends to it).
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

func worker(d wire.Deps, policy tasks.DialPolicy) tasks.SQSHandler {
	w := tasks.NewWorker(d.Store, tasks.NewFakeDataPlane(d.Log, policy), taskswire.Outbox(d), d.Log)
	return w.Handle
}
