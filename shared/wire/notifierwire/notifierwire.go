// Package notifierwire wires the notifier function (functions/notifier).
package notifierwire

import (
	"context"

	"cads/shared/notifier"
	"cads/shared/wire"
)

// FromEnv reads the notifier's dependencies from the environment.
func FromEnv(ctx context.Context) (wire.Deps, error) { return wire.FromEnv(ctx) }

// Handler is the notifier's handler: it delivers the queued invitations
// (locally and until a mail service is wired, as log lines) and marks them
// sent.
func Handler(d wire.Deps) notifier.NotifyHandler {
	return notifier.NewNotifyHandler(d.Store.Invitations, notifier.LogNotifier{Log: d.Log}, d.Log)
}
