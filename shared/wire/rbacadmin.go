package wire

import (
	"cads/shared/access"
	"cads/shared/apigw"
	"cads/shared/rbacadmin"
)

// NotificationsQueue is the logical id, in template.yaml, of the queue of
// invitations to deliver.
const NotificationsQueue = "NotificationsQueue"

// Roles is the roles function's handler: roles, invitations, groups, group
// invitations and service users of an account, and the invitee's side.
// Invitations are queued on NotificationsQueue.
func Roles(d Deps) apigw.ProxyHandler {
	var q rbacadmin.Queue
	if url := d.QueueURLs[NotificationsQueue]; url != "" && d.SQS != nil {
		q = rbacadmin.SQSQueue{Client: d.SQS, URL: url}
	}
	return apigw.Lambda(d.Log, rbacadmin.New(d.Store, access.New(d.Store, d.Log), q, d.Log))
}

// Notifier is the notifier function's handler: it delivers the queued
// invitations (locally and until a mail service is wired, as log lines)
// and marks them sent.
func Notifier(d Deps) rbacadmin.NotifyHandler {
	return rbacadmin.NewNotifyHandler(d.Store, rbacadmin.LogNotifier{Log: d.Log}, d.Log)
}
