package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// The schema migration gives items written by older code what the current
// code writes with them: the index keys of their entity (computed by the
// same builders the writes use, so the formats have one source), the
// usage counts of what an account holds, the
// claim of each of an application's aliases, and an account's name key
// with its name claim under it. It scans the whole table a
// page at a time (MigratePage); shared/bootstrap drives it and records the
// scan position so a stopped run is continued.
//
// Every write is conditional: index keys only while the attributes (and
// the item's version, where it has one) are still as read, a derived item
// only while it is absent. So an API write racing the migration always
// wins, and a second run writes nothing.

// SchemaVersion is the version of the migration this code carries. Raise
// it, and the Installation resource's SchemaVersion in template.yaml, with
// every change that gives items a key or a derived item older items lack:
// a finished version is not scanned again.
//
// 2: usage counts of sub-accounts, application tests and metric
// prototypes (the account's deletion reads them).
// 3: an account's name_key (shared/names.Key of its name) and its name
// claim moved from the lower-cased name to that key (migrateNameClaim);
// usage counts of the quotas: an account's custom roles, groups, service
// users, role and group invitations, an application's actions and page
// controls.
// 4: an account's name_skeleton (shared/names.Skeleton of its name) and,
// where it differs from the name key, a second name claim under it
// (migrateNameClaim).
const SchemaVersion = 4

const skSchemaMigration = "SCHEMAMIGRATION"

// Names MigrationPage.Fixed counts the derived items under.
const (
	FixedUsage     = "usage"
	FixedAlias     = "alias"
	FixedNameClaim = "name_claim"
)

// migrateFanOut bounds the items of one page fixed at once.
const migrateFanOut = 8

// GetSchemaMigration reads the migration's progress (domain.ErrNotFound
// before the first run).
func (s *Installation) GetSchemaMigration(ctx context.Context) (domain.SchemaMigration, error) {
	var m domain.SchemaMigration
	err := s.getItem(ctx, "get schema migration", pkInstallation, skSchemaMigration, &m)
	return m, err
}

// PutSchemaMigration records the migration's progress, unless the table
// records a later version (older code of a rolled-back deployment must
// not move it back): then it is a *domain.Error.
func (s *Installation) PutSchemaMigration(ctx context.Context, m domain.SchemaMigration) error {
	it, err := item(keyAttrs{PK: pkInstallation, SK: skSchemaMigration, Entity: "schema_migration"}, m)
	if err != nil {
		return err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      it,
		ConditionExpression:       aws.String("attribute_not_exists(PK) OR #v <= :v"),
		ExpressionAttributeNames:  map[string]string{"#v": "version"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": avNum(int64(m.Version))},
	})
	if ddb.IsConditionFailed(err) {
		return domain.AheadOf("the table's schema migration is at a later version", m.Version)
	}
	return wrap("put schema migration", err)
}

// MigrationPage is what one page of the migration read and wrote.
type MigrationPage struct {
	Scanned int
	// Fixed counts the items given keys, by entity, and the derived items
	// written (FixedUsage, FixedAlias).
	Fixed map[string]int
	// Skipped counts writes whose condition failed: the item (or the
	// derived item) was written meanwhile by the current code.
	Skipped int
	// Taken lists aliases an application names that another application
	// claims: the migration cannot decide between them.
	Taken []string
	// NamesTaken lists accounts (id and name) whose name reads as another
	// account's (their name keys are equal): each keeps its old claim, and
	// the operator renames one.
	NamesTaken []string
	// Odd lists items (PK/SK) whose attributes give another key than
	// their own: left as they are.
	Odd []string
	// AfterPK, AfterSK: where the next page starts; Done: nothing is left.
	AfterPK, AfterSK string
	Done             bool
}

// NameKeys gives a name's two keys (shared/names.KeyAndSkeleton).
type NameKeys func(name string) (key, skeleton string)

// MigratePage scans up to limit items after (afterPK, afterSK) ("" from
// the start) and fixes them. nameKeys is shared/names' Key and Skeleton,
// given by the caller so that the store does not link the confusables
// table every function would then carry.
func (s *Installation) MigratePage(ctx context.Context, afterPK, afterSK string, limit int, nameKeys NameKeys) (MigrationPage, error) {
	if nameKeys == nil {
		return MigrationPage{}, errors.New("migrate: no name key function")
	}
	ctx = unjournaled(ctx)
	in := &dynamodb.ScanInput{TableName: aws.String(s.table), Limit: aws.Int32(int32(limit)), ConsistentRead: aws.Bool(true)}
	if afterPK != "" {
		in.ExclusiveStartKey = key(afterPK, afterSK)
	}
	out, err := s.db.Scan(ctx, in)
	if err != nil {
		return MigrationPage{}, wrap("migrate: scan", err)
	}
	p := MigrationPage{Scanned: len(out.Items), Fixed: map[string]int{}, Done: len(out.LastEvaluatedKey) == 0}
	if !p.Done {
		if err := attributevalue.UnmarshalMap(out.LastEvaluatedKey, &struct {
			PK *string `dynamodbav:"PK"`
			SK *string `dynamodbav:"SK"`
		}{&p.AfterPK, &p.AfterSK}); err != nil {
			return p, fmt.Errorf("migrate: scan position: %w", err)
		}
	}
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(migrateFanOut)
	for _, it := range out.Items {
		g.Go(func() error {
			r, err := s.migrateItem(gctx, it, nameKeys)
			mu.Lock()
			defer mu.Unlock()
			for k, n := range r.fixed {
				p.Fixed[k] += n
			}
			p.Skipped += r.skipped
			p.Taken = append(p.Taken, r.taken...)
			p.NamesTaken = append(p.NamesTaken, r.namesTaken...)
			p.Odd = append(p.Odd, r.odd...)
			return err
		})
	}
	return p, g.Wait()
}

type itemResult struct {
	fixed      map[string]int
	skipped    int
	taken      []string
	namesTaken []string
	odd        []string
}

func (r *itemResult) add(k string, n int) {
	if n == 0 {
		return
	}
	if r.fixed == nil {
		r.fixed = map[string]int{}
	}
	r.fixed[k] += n
}

func (s *Installation) migrateItem(ctx context.Context, it map[string]types.AttributeValue, nameKeys NameKeys) (itemResult, error) {
	var r itemResult
	entity := str(it["entity"])
	want, ok, err := s.keysFor(entity, it)
	if err != nil || !ok {
		return r, err
	}
	if pk, sk := str(it[AttrPK]), str(it[AttrSK]); want.PK != pk || want.SK != sk {
		// The item's attributes do not name its own key: the builders
		// cannot be trusted with its index keys either.
		r.odd = append(r.odd, pk+"/"+sk)
		return r, nil
	}
	op := fmt.Sprintf("migrate %s %s/%s", entity, want.PK, want.SK)
	switch fixed, err := s.fixKeys(ctx, it, want); {
	case errors.Is(err, ddb.ErrConditionFailed):
		r.skipped++
	case err != nil:
		return r, fmt.Errorf("%s: %w", op, err)
	case fixed:
		r.add(entity, 1)
	}
	switch entity {
	case "account":
		n, skipped, err := s.fixUsage(ctx, str(it["id"]))
		r.add(FixedUsage, n)
		r.skipped += skipped
		if err != nil {
			return r, fmt.Errorf("%s: usage: %w", op, err)
		}
		var a domain.AccountRecord
		if err := attributevalue.UnmarshalMap(it, &a); err != nil {
			return r, fmt.Errorf("%s: %w", op, err)
		}
		wantKey, wantSkeleton := nameKeys(a.Name)
		switch res, err := s.migrateNameClaim(ctx, a, it["updated"], wantKey, wantSkeleton); {
		case err != nil:
			return r, fmt.Errorf("%s: name claim: %w", op, err)
		case res == claimMoved:
			r.add(FixedNameClaim, 1)
		case res == claimRaced:
			r.skipped++
		case res == claimTaken:
			r.namesTaken = append(r.namesTaken, a.ID+" "+strconv.Quote(a.Name))
		case res == claimOdd:
			r.odd = append(r.odd, accountNamePK(a.Account)+"/"+skAccountName)
		}
	case "application":
		var a domain.Application
		if err := attributevalue.UnmarshalMap(it, &a); err != nil {
			return r, fmt.Errorf("%s: %w", op, err)
		}
		n, skipped, taken, err := s.fixClaims(ctx, a)
		r.add(FixedAlias, n)
		r.skipped += skipped
		r.taken = taken
		if err != nil {
			return r, fmt.Errorf("%s: aliases: %w", op, err)
		}
		n, skipped, err = s.fixAppUsage(ctx, a.ID)
		r.add(FixedUsage, n)
		r.skipped += skipped
		if err != nil {
			return r, fmt.Errorf("%s: usage: %w", op, err)
		}
	}
	return r, nil
}

// keysFor is the keys the current code writes for the item: false for an
// entity without index keys.
func (s *Installation) keysFor(entity string, it map[string]types.AttributeValue) (keyAttrs, bool, error) {
	switch entity {
	case "account":
		return keysOf(it, accountKey)
	case "role":
		return keysOf(it, roleKey)
	case "group":
		return keysOf(it, groupKey)
	case "principal":
		if str(it["kind"]) == domain.KindServiceUser {
			return keysOf(it, func(u domain.ServiceUser) keyAttrs { return s.repos.Principals.serviceUserWrites(u)[0].k })
		}
		return keysOf(it, func(p domain.Principal) keyAttrs { return s.repos.Principals.principalWrites(p)[0].k })
	case "access_key":
		return keysOf(it, accessKeyKey)
	case "grant", "group_grant":
		return keysOf(it, grantKey)
	case "invitation":
		return keysOf(it, invitationKey)
	case "entitlement":
		return keysOf(it, entitlementKey)
	case "application":
		return keysOf(it, appKey)
	case "address_set":
		return keysOf(it, addrSetKey)
	case "address_entry":
		var e domain.AddressEntry
		if err := attributevalue.UnmarshalMap(it, &e); err != nil {
			return keyAttrs{}, false, fmt.Errorf("migrate %s: %w", entity, err)
		}
		k, err := addrEntryKey(e)
		return k, err == nil, err
	case "apptest":
		return keysOf(it, appTestKey)
	case "metric_prototype":
		return keysOf(it, metricProtoKey)
	case "task":
		return keysOf(it, taskKey)
	}
	return keyAttrs{}, false, nil
}

func keysOf[T any](it map[string]types.AttributeValue, build func(T) keyAttrs) (keyAttrs, bool, error) {
	var v T
	if err := attributevalue.UnmarshalMap(it, &v); err != nil {
		return keyAttrs{}, false, fmt.Errorf("migrate %s: %w", str(it["entity"]), err)
	}
	return build(v), true, nil
}

func str(v types.AttributeValue) string {
	if s, ok := v.(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// fixKeys sets the index keys of want the item lacks or holds in an older
// form. It never removes one: a key the current code would not write is
// one a later state of the item will (an invitation once sent) or one
// that is not the migration's to judge. ddb.ErrConditionFailed: the item
// changed since it was read (its current writer wrote the keys) or is gone.
func (s *Installation) fixKeys(ctx context.Context, it map[string]types.AttributeValue, want keyAttrs) (bool, error) {
	var (
		set   []string
		conds = []string{"attribute_exists(PK)"}
		names = map[string]string{}
		vals  = map[string]types.AttributeValue{}
	)
	for i, a := range []struct{ name, want string }{
		{AttrGSI1PK, want.GSI1PK}, {AttrGSI1SK, want.GSI1SK},
		{AttrGSI2PK, want.GSI2PK}, {AttrGSI2SK, want.GSI2SK},
		{AttrGSI3PK, want.GSI3PK}, {AttrGSI3SK, want.GSI3SK},
	} {
		have, present := it[a.name]
		if a.want == "" || present && str(have) == a.want {
			continue
		}
		n, v := "#k"+strconv.Itoa(i), ":k"+strconv.Itoa(i)
		names[n], vals[v] = a.name, avStr(a.want)
		set = append(set, n+" = "+v)
		if present {
			vals[":o"+strconv.Itoa(i)] = have
			conds = append(conds, n+" = :o"+strconv.Itoa(i))
		} else {
			conds = append(conds, "attribute_not_exists("+n+")")
		}
	}
	if len(set) == 0 {
		return false, nil
	}
	if v, ok := it["version"]; ok {
		names["#ver"], vals[":ver"] = "version", v
		conds = append(conds, "#ver = :ver")
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(want.PK, want.SK),
		UpdateExpression:          aws.String("SET " + strings.Join(set, ", ")),
		ConditionExpression:       aws.String(strings.Join(conds, " AND ")),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: vals,
	})
	if ddb.IsConditionFailed(err) {
		return false, ddb.ErrConditionFailed
	}
	return err == nil, wrap("update keys", err)
}

// fixUsage writes the account's usage counts that are missing: the number
// of its applications, address sets, sub-accounts, application tests and
// metric prototypes (version 2), custom roles, groups, service users and
// role and group invitations (version 3), as the create transactions would have kept it.
func (s *Installation) fixUsage(ctx context.Context, account string) (written, skipped int, err error) {
	gsi := func(pk string) func(context.Context) (int, error) {
		return func(ctx context.Context) (int, error) { return s.countGSI1(ctx, pk) }
	}
	return s.fixCounts(ctx, accountPK(account), []usageCount{
		{domain.ResourceApplications, gsi(appsGSI(account))},
		{domain.ResourceAddressSets, gsi(addressSetsGSI(account))},
		{usageSubAccounts, gsi(childrenGSI(account))},
		{usageTests, gsi(appTestsGSI(account))},
		{usageMetricPrototypes, gsi(metricProtosGSI(account))},
		{domain.ResourceRoles, func(ctx context.Context) (int, error) {
			roles, _, err := s.repos.Roles.rbacPartition(ctx, account)
			n := 0
			for _, r := range roles {
				if r.Custom() {
					n++
				}
			}
			return n, err
		}},
		{domain.ResourceGroups, func(ctx context.Context) (int, error) {
			_, groups, err := s.repos.Roles.rbacPartition(ctx, account)
			return len(groups), err
		}},
		{domain.ResourceServiceUsers, gsi(serviceUsersGSI(account))},
		{domain.ResourceInvitations, s.countInvitations(account, domain.InvitationRole)},
		{domain.ResourceGroupInvitations, s.countInvitations(account, domain.InvitationGroup)},
	})
}

// countInvitations counts an account's invitations of kind (consistent).
func (s *Installation) countInvitations(account, kind string) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		items, err := s.query(ctx, "count invitations", &dynamodb.QueryInput{
			KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :sk)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avStr(invitationsPK(account)), ":sk": avStr(invitationSK(kind, ""))},
			ProjectionExpression:      aws.String("SK"),
		}, 0)
		return len(items), err
	}
}

// fixAppUsage writes an application's usage counts that are missing: its
// actions and page controls (version 3; current versions only, as
// CreatePageControl counts).
func (s *Installation) fixAppUsage(ctx context.Context, app string) (written, skipped int, err error) {
	return s.fixCounts(ctx, appPK(app), []usageCount{
		{domain.ResourceActions, func(ctx context.Context) (int, error) {
			items, err := s.query(ctx, "count actions", &dynamodb.QueryInput{
				KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :sk)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avStr(appPK(app)), ":sk": avStr(prefixAction)},
				ProjectionExpression:      aws.String("SK"),
			}, 0)
			return len(items), err
		}},
		{domain.ResourcePageControls, func(ctx context.Context) (int, error) {
			items, err := s.query(ctx, "count page controls", &dynamodb.QueryInput{
				KeyConditionExpression:    aws.String("PK = :pk AND begins_with(SK, :sk)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avStr(appPK(app)), ":sk": avStr(prefixPageControl)},
				ProjectionExpression:      aws.String("SK"),
			}, 0)
			n := 0
			for _, it := range items {
				if !strings.Contains(strings.TrimPrefix(str(it[AttrSK]), prefixPageControl), "#") {
					n++
				}
			}
			return n, err
		}},
	})
}

// usageCount is one usage item the migration derives: its kind and how
// to count what it counts.
type usageCount struct {
	kind  string
	count func(context.Context) (int, error)
}

// fixCounts writes the usage items of partition pk that are missing,
// each with what its count finds. A count of 0 is what a missing item
// already means. The put is conditional on the item's absence, so a
// create or delete that wrote it meanwhile is kept (counted as skipped;
// its count is off by the creates and deletes made before it,
// docs/deploy.md). Running again writes nothing: each item is then
// present.
func (s *Installation) fixCounts(ctx context.Context, pk string, kinds []usageCount) (written, skipped int, err error) {
	keys := make([]map[string]types.AttributeValue, len(kinds))
	for i, k := range kinds {
		keys[i] = key(pk, usageSK(k.kind))
	}
	found, err := ddb.BatchGetConsistent(ctx, s.db, s.table, keys, AttrSK)
	if err != nil {
		return 0, 0, wrap("read usage", err)
	}
	have := map[string]bool{}
	for _, f := range found {
		have[str(f[AttrSK])] = true
	}
	for _, k := range kinds {
		if have[usageSK(k.kind)] {
			continue
		}
		n, err := k.count(ctx)
		if err != nil {
			return written, skipped, err
		}
		if n == 0 {
			continue
		}
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       key(pk, usageSK(k.kind)),
			UpdateExpression:          aws.String("SET #n = :n"),
			ConditionExpression:       aws.String("attribute_not_exists(PK)"),
			ExpressionAttributeNames:  map[string]string{"#n": "n"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":n": avNum(int64(n))},
		})
		switch {
		case ddb.IsConditionFailed(err):
			skipped++
		case err != nil:
			return written, skipped, wrap("write usage "+k.kind, err)
		default:
			written++
		}
	}
	return written, skipped, nil
}

// countGSI1 counts the items of a GSI1 partition (all pages).
func (s *Installation) countGSI1(ctx context.Context, pk string) (int, error) {
	in := gsiQuery(pk)
	in.TableName, in.Select = aws.String(s.table), types.SelectCount
	n := 0
	for {
		out, err := s.db.Query(ctx, in)
		if err != nil {
			return 0, wrap("count "+pk, err)
		}
		n += int(out.Count)
		if len(out.LastEvaluatedKey) == 0 {
			return n, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// fixClaims writes the claims of a's aliases that are missing, in one
// transaction with a check that a's version is the one read: the aliases
// change only with the configuration, which raises it, so a claim is
// never written for an alias a has dropped meanwhile. Aliases another
// application claims are returned, not written.
func (s *Installation) fixClaims(ctx context.Context, a domain.Application) (written, skipped int, taken []string, err error) {
	if len(a.Aliases) == 0 {
		return 0, 0, nil, nil
	}
	keys := make([]map[string]types.AttributeValue, len(a.Aliases))
	for i, al := range a.Aliases {
		keys[i] = key(aliasPK(al), skAlias)
	}
	found, err := ddb.BatchGetConsistent(ctx, s.db, s.table, keys, AttrPK, "app")
	if err != nil {
		return 0, 0, nil, wrap("read alias claims", err)
	}
	holder := map[string]string{}
	for _, f := range found {
		holder[str(f[AttrPK])] = str(f["app"])
	}
	var items []types.TransactWriteItem
	for _, al := range a.Aliases {
		switch h, ok := holder[aliasPK(al)]; {
		case ok && h == a.ID:
		case ok:
			taken = append(taken, domain.AliasKey(al))
		default:
			c, err := s.repos.Applications.claimAlias(a.Account, a.ID, al)
			if err != nil {
				return 0, 0, taken, err
			}
			items = append(items, c)
		}
	}
	if len(items) == 0 {
		return 0, 0, taken, nil
	}
	items = append(items, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(s.table),
		Key:                       key(appPK(a.ID), skApp),
		ConditionExpression:       aws.String("#v = :v"),
		ExpressionAttributeNames:  map[string]string{"#v": "version"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": avNum(int64(a.Version))},
	}})
	err = s.transact(ctx, "claim aliases", items)
	if errors.Is(err, ddb.ErrConditionFailed) {
		return 0, 1, taken, nil
	}
	if err != nil {
		return 0, 0, taken, err
	}
	return len(items) - 1, 0, taken, nil
}

type claimResult int

const (
	claimCurrent claimResult = iota // the account has this key already
	claimMoved
	claimRaced // the account changed since it was read: its writer set the key
	claimTaken // another account's claim holds the key
	claimOdd   // the old claim is another account's: left as it is
)

// migrateNameClaim gives account a its name keys (the name key of version
// 3, the skeleton of version 4) and moves its name claims to them from
// where they are (the lower-cased name of older code, or older keys), in
// one transaction: the keys are set only while the account is as read
// (same updated and name keys, not being deleted, so a rename or a DELETE
// that read it first decides instead), each new claim is written only if
// no other account holds it, and each old one deleted only if it is a's.
// A second run finds the keys set and writes nothing.
func (s *Installation) migrateNameClaim(ctx context.Context, a domain.AccountRecord, updated types.AttributeValue, wantKey, wantSkeleton string) (claimResult, error) {
	if a.NameKey == wantKey && a.NameSkeleton == wantSkeleton {
		return claimCurrent, nil
	}
	if updated == nil {
		return claimOdd, nil
	}
	from := accountNamePKs(a.Account)
	next := a.Account
	next.NameKey, next.NameSkeleton = wantKey, wantSkeleton
	to := accountNamePKs(next)
	vals := map[string]types.AttributeValue{":k": avStr(wantKey), ":sk": avStr(wantSkeleton), ":u": updated}
	cond := "attribute_exists(PK) AND attribute_not_exists(deleting) AND updated = :u AND " + nameKeysAsRead(a.Account, vals)
	items := []types.TransactWriteItem{{Update: &types.Update{
		TableName:                 aws.String(s.table),
		Key:                       key(accountPK(a.ID), skAccount),
		UpdateExpression:          aws.String("SET name_key = :k, name_skeleton = :sk"),
		ConditionExpression:       aws.String(cond),
		ExpressionAttributeValues: vals,
	}}}
	// The claims (indexes 1 to len(to)), then the old claims given up.
	for _, pk := range to {
		claim, err := item(nameClaimKey(pk), accountName{a.ID})
		if err != nil {
			return 0, err
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName:                 aws.String(s.table),
			Item:                      claim,
			ConditionExpression:       aws.String("attribute_not_exists(PK) OR account = :id"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": avStr(a.ID)},
		}})
	}
	for _, pk := range from {
		if !slices.Contains(to, pk) {
			items = append(items, s.deleteNameClaim(pk, a.ID))
		}
	}
	err := s.transact(ctx, "move name claim", items)
	var tx *ddb.TxCanceledError
	if errors.As(err, &tx) && tx.HasReason(ddb.ReasonConditionalCheckFailed) {
		for _, r := range tx.Reasons {
			if r.Code != ddb.ReasonConditionalCheckFailed {
				continue
			}
			switch {
			case r.Index == 0:
				return claimRaced, nil
			case r.Index <= len(to):
				return claimTaken, nil
			default:
				return claimOdd, nil
			}
		}
	}
	if err != nil {
		return 0, err
	}
	return claimMoved, nil
}
