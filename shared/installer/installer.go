// Package installer is the CloudFormation custom resource that makes a
// deployed stack usable: on the stack's first deployment it runs the same
// bootstrap as the local platform (shared/bootstrap) against the stack's
// table and puts the operator's first access key into the stack's secret.
//
// Create and Update run the bootstrap, which changes nothing on an
// installed table: the stored key is never replaced. Then they run the
// schema migration (bootstrap.MigrateSchema: index keys and derived items
// older code did not write; the template's SchemaVersion property changes
// with store.SchemaVersion, so a new version brings an Update). Then they
// bring the built-in roles of every account to the current revision of their
// definitions (bootstrap.UpgradeRoles): a stack updated in place gets the
// permits later revisions added without losing its administrators' edits.
// The template's BuiltinRolesRevision property changes with the revision,
// so CloudFormation sends an Update whenever there is something to do.
// Delete keeps the installation (the table is retained with the stack's
// deletion). The key never appears in a response, an output or a log.
package installer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/cfn"

	"cads/shared/bootstrap"
	"cads/shared/store"
)

// SecretStore keeps the operator key: AWS Secrets Manager on AWS
// (SecretsManager), anything with the same behaviour in tests.
type SecretStore interface {
	// Put makes value the secret's current value.
	Put(ctx context.Context, secretID, value string) error
	// HasValue tells whether the secret has a current value.
	HasValue(ctx context.Context, secretID string) (bool, error)
}

// Installer handles the custom resource's events.
type Installer struct {
	Store   *store.Store
	Secrets SecretStore
	Log     *slog.Logger
}

// Properties of the custom resource in template.yaml.
const (
	PropSecretID      = "SecretId"
	PropOperatorEmail = "OperatorEmail"
	// PropSchemaVersion is the store.SchemaVersion the template was
	// released with: a new one brings an Update that migrates.
	PropSchemaVersion = "SchemaVersion"
)

// responseMargin is kept before the function's deadline so a slow table or
// secret store still ends in a FAILED response: without any response
// CloudFormation waits an hour.
const responseMargin = 5 * time.Second

// upgradeMargin is kept before the deadline when the roles upgrade starts
// a page: a page (one read of up to 50 accounts' roles and their writes)
// takes well under it.
const upgradeMargin = 20 * time.Second

// Handle is a cfn.CustomResourceFunction: wrap it with cfn.LambdaWrap.
// The physical id names the installation's root account, so it is the same
// on every run and CloudFormation never sees a replacement.
func (in *Installer) Handle(ctx context.Context, ev cfn.Event) (physicalID string, data map[string]any, err error) {
	log := in.Log.With("request_type", string(ev.RequestType), "logical_id", ev.LogicalResourceID, "request_id", ev.RequestID)
	if ev.RequestType == cfn.RequestDelete {
		// The table and the secret are retained with the stack; removing
		// the installation from under them would lock everyone out.
		log.InfoContext(ctx, "installer: delete: the installation stays in the retained table")
		return ev.PhysicalResourceID, nil, nil
	}
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-responseMargin))
		defer cancel()
	}
	secretID, email, err := properties(ev.ResourceProperties)
	if err != nil {
		return ev.PhysicalResourceID, nil, err
	}
	res, err := bootstrap.RunAndKeep(ctx, in.Store, email, func(ctx context.Context, secret string) error {
		return in.Secrets.Put(ctx, secretID, secret)
	})
	if err != nil {
		return ev.PhysicalResourceID, nil, fmt.Errorf("installer: %w", err)
	}
	data = map[string]any{"RootAccount": res.RootAccount, "Operator": res.Operator}
	physicalID = "installation/" + res.RootAccount
	var stopBy time.Time
	if d, ok := ctx.Deadline(); ok {
		stopBy = d.Add(-upgradeMargin)
	}
	// The migration first: the roles upgrade pages through the accounts'
	// GSI2 keys, which accounts older code wrote lack.
	if err := in.migrate(ctx, log, ev, stopBy, data); err != nil {
		return physicalID, nil, err
	}
	up, err := bootstrap.UpgradeRoles(ctx, in.Store, log, bootstrap.UpgradeOptions{StopBy: stopBy})
	if err != nil {
		return physicalID, nil, fmt.Errorf("installer: %w", err)
	}
	if !up.Done {
		// Failing the deployment says so; the progress is recorded, and the
		// next deployment goes on from it.
		return physicalID, nil, fmt.Errorf("installer: the built-in roles upgrade to revision %d did not finish in time (%d accounts done so far); deploy again to go on from where it stopped (docs/deploy.md)", up.Revision, up.Progress.Accounts)
	}
	data["BuiltinRolesRevision"] = up.Revision
	if res.Created {
		log.InfoContext(ctx, "installer: created the installation; operator key stored in the secret", "root_account", res.RootAccount, "operator", res.Operator, "key_id", res.KeyID, "secret_id", secretID)
		return physicalID, data, nil
	}
	// Installed before: the key stays as it is. A secret without a value
	// cannot be repaired from the table (it keeps only the key's hash).
	has, err := in.Secrets.HasValue(ctx, secretID)
	switch {
	case err != nil:
		log.WarnContext(ctx, "installer: installation exists; could not check the secret", "secret_id", secretID, "error", err.Error())
	case !has:
		log.WarnContext(ctx, "installer: installation exists but the secret holds no key; see docs/deploy.md (lost operator key)", "secret_id", secretID, "root_account", res.RootAccount)
	default:
		log.InfoContext(ctx, "installer: installation exists; operator key unchanged", "root_account", res.RootAccount, "secret_id", secretID)
	}
	return physicalID, data, nil
}

// migrate runs the schema migration when the template asks for this
// code's version. An older version (or none) in the properties is a
// rollback's Update, sent while this code still runs the function: the
// stack is going back to code that does not know the migration, and a
// failure now would leave the rollback failed too.
func (in *Installer) migrate(ctx context.Context, log *slog.Logger, ev cfn.Event, stopBy time.Time, data map[string]any) error {
	asked, _ := strconv.Atoi(fmt.Sprint(ev.ResourceProperties[PropSchemaVersion]))
	if asked < store.SchemaVersion {
		log.WarnContext(ctx, "installer: the template asks for an older schema version than this code's; no migration (a rollback)",
			"asked", ev.ResourceProperties[PropSchemaVersion], "version", store.SchemaVersion)
		return nil
	}
	mig, err := bootstrap.MigrateSchema(ctx, in.Store, log, bootstrap.MigrateOptions{StopBy: stopBy})
	if err != nil {
		return fmt.Errorf("installer: %w", err)
	}
	if !mig.Done {
		return fmt.Errorf("installer: the schema migration to version %d did not finish in time (%d items scanned so far); deploy again to go on from where it stopped (docs/deploy.md)", mig.Version, mig.Progress.Scanned)
	}
	data["SchemaVersion"] = mig.Version
	return nil
}

func properties(p map[string]any) (secretID, email string, err error) {
	secretID, _ = p[PropSecretID].(string)
	email, _ = p[PropOperatorEmail].(string)
	var errs []error
	if secretID == "" {
		errs = append(errs, fmt.Errorf("property %s is missing", PropSecretID))
	}
	if email == "" {
		errs = append(errs, fmt.Errorf("property %s is missing", PropOperatorEmail))
	}
	return secretID, email, errors.Join(errs...)
}
