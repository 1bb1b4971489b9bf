package wire

import (
	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/applications"
	"cads/shared/tasks"
)

// TasksQueue is the logical id of the task queue in template.yaml.
const TasksQueue = "TasksQueue"

// taskOutbox writes tasks and sends them to the task queue; without a
// queue (a deployment or test that declares none) tasks wait in the
// outbox and every submit logs why.
func taskOutbox(d Deps) *tasks.Outbox {
	var send tasks.Sender = tasks.NoQueue{}
	if url := d.QueueURLs[TasksQueue]; url != "" && d.SQS != nil {
		send = tasks.SQSSender{Client: d.SQS, QueueURL: url}
	}
	return tasks.NewOutbox(d.Store, send, d.Log)
}

// Applications is the applications function's handler: applications,
// their actions and page controls.
func Applications(d Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, applications.New(d.Store, access.New(d.Store, d.Log), taskOutbox(d), d.Log))
}

// Tasks is the tasks function's handler: POST and GET /v2/tasks.
func Tasks(d Deps) apigw.ProxyHandler {
	return apigw.Lambda(d.Log, tasks.New(d.Store, access.New(d.Store, d.Log), taskOutbox(d), d.Log))
}

// TaskWorker is the task queue's handler as deployed: run-action calls
// may reach public addresses only.
func TaskWorker(d Deps) tasks.SQSHandler {
	return taskWorker(d, tasks.PublicOnly)
}

// LocalTaskWorker is the task worker of the local platform: run-action
// calls may reach loopback addresses only (the developer's machine).
func LocalTaskWorker(d Deps) tasks.SQSHandler {
	return taskWorker(d, tasks.LoopbackOnly)
}

func taskWorker(d Deps, policy tasks.DialPolicy) tasks.SQSHandler {
	w := tasks.NewWorker(d.Store, tasks.NewFakeDataPlane(d.Log, policy), taskOutbox(d), d.Log)
	return w.Handle
}
