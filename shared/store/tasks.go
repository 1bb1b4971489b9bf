package store

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"cads/shared/ddb"
	"cads/shared/domain"
)

// appendLog is the update term that appends one line to the task's log,
// with its values.
func appendLog(l domain.TaskLogLine) (string, map[string]types.AttributeValue, error) {
	av, err := attributevalue.Marshal([]domain.TaskLogLine{l})
	if err != nil {
		return "", nil, wrap("encode task log line", err)
	}
	return "#log = list_append(if_not_exists(#log, :nolog), :line)", map[string]types.AttributeValue{
		":line": av, ":nolog": &types.AttributeValueMemberL{Value: []types.AttributeValue{}},
	}, nil
}

// Errors of the worker's conditional writes.
var (
	// ErrLeaseHeld: another invocation is running the task, or it is finished.
	ErrLeaseHeld = errors.New("task is finished or leased by another worker")
	// ErrLeaseLost: this invocation's lease was taken over; its result is void.
	ErrLeaseLost = errors.New("task lease lost")
)

const (
	skTask      = "TASK"
	prefixTaskG = "TASK#"
)

func taskPK(id string) string        { return "TASK#" + id }
func tasksGSI(acct string) string    { return "TASKS#" + acct }
func caPK(account string) string     { return "CA#" + account }
func invalidationSK(t string) string { return "INVALIDATION#" + t }

func taskGSISK(created time.Time, id string) string {
	return prefixTaskG + created.UTC().Format(timeLayout) + "#" + id
}

func taskKey(t domain.Task) keyAttrs {
	return keyAttrs{PK: taskPK(t.ID), SK: skTask, GSI1PK: tasksGSI(t.Account), GSI1SK: taskGSISK(t.Created, t.ID), Entity: "task"}
}

// CreateTask writes a pending task and its outbox marker m in one
// transaction: from then on the task cannot be lost, whether or not the
// queue message that follows is sent. The marker lives in the task's
// partition (SK OUTBOX) and is held: FinishTask deletes it.
func (s *Tasks) CreateTask(ctx context.Context, t domain.Task, m *OutboxMarker) error {
	m.place(taskPK(t.ID), skOutbox, true)
	items, err := s.puts([]keyAttrsValue{
		{taskKey(t), t},
		{m.keys("task_outbox"), m},
	})
	if err != nil {
		return err
	}
	err = s.transact(ctx, "create task", items)
	if errors.Is(err, ddb.ErrConditionFailed) {
		return domain.Duplicate("task", t.ID, "")
	}
	return err
}

// LoadTask reads a task whatever its account (the worker's read).
func (s *Tasks) LoadTask(ctx context.Context, id string) (domain.Task, error) {
	var t domain.Task
	err := s.getItem(ctx, "get task", taskPK(id), skTask, &t)
	return t, err
}

// GetTask reads a task of account; another account's is domain.ErrNotFound.
func (s *Tasks) GetTask(ctx context.Context, account, id string) (domain.Task, error) {
	t, err := s.LoadTask(ctx, id)
	if err != nil {
		return domain.Task{}, err
	}
	if t.Account != account {
		return domain.Task{}, domain.ErrNotFound
	}
	return t, nil
}

// ListTasks returns the tasks of account created in [from, to) (zero
// times: unbounded), newest first, at most max (0: all). It reads page by
// page as the API's list does, so it shows the writes of the last moments
// that the index does not yet (the journal, Read your writes).
func (s *Tasks) ListTasks(ctx context.Context, account string, from, to time.Time, max int) ([]domain.Task, error) {
	var (
		out   []domain.Task
		after string
	)
	for {
		n := 100
		if max > 0 {
			n = min(n, max-len(out))
		}
		page, pos, more, err := s.PageTasks(ctx, account, from, to, after, true, n)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if !more || len(page) == 0 || (max > 0 && len(out) >= max) {
			return out, nil
		}
		after = pos[len(pos)-1]
	}
}

// PageTasks reads at most n tasks of account created in [from, to) (zero
// times: unbounded) after position after in creation order (desc: newest
// first), with their positions and whether more may follow: one Query of
// n items, whatever the number of tasks.
func (s *Tasks) PageTasks(ctx context.Context, account string, from, to time.Time, after string, desc bool, n int) ([]domain.Task, []string, bool, error) {
	g := collection{op: "list tasks", index: IndexGSI1, pk: tasksGSI(account), skPrefix: prefixTaskG,
		tableKey: func(pos string) (string, string) { return taskPK(idOf(pos)), skTask }}
	if !from.IsZero() {
		g.lo = from.UTC().Format(timeLayout)
	}
	if !to.IsZero() {
		g.hi = to.UTC().Format(timeLayout)
	}
	return pageOf[domain.Task](ctx, s.Table, g, after, desc, n)
}

// ClaimTask gives the invocation `owner` the task until leaseUntil: it
// becomes running (started is set once) and its attempt count grows by one.
// It is ErrLeaseHeld, with the task as it is, when the task is finished,
// another lease is live or the task is scheduled for later (not Due);
// domain.ErrNotFound when there is no such task.
func (s *Tasks) ClaimTask(ctx context.Context, id, owner string, now, leaseUntil time.Time) (domain.Task, error) {
	logTerm, vals, err := appendLog(domain.TaskLogLine{Created: now.UTC(), Severity: domain.SeverityInfo, Activity: domain.ActivityClaim, Message: "a worker took the task", Process: owner})
	if err != nil {
		return domain.Task{}, err
	}
	for k, v := range map[string]types.AttributeValue{
		":running": avStr(domain.TaskRunning), ":pending": avStr(domain.TaskPending), ":now": avStr(now.UTC().Format(timeLayout)),
		":o": avStr(owner), ":lu": avNum(leaseUntil.UnixMilli()), ":nowms": avNum(now.UnixMilli()), ":one": avNum(1),
	} {
		vals[k] = v
	}
	res, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table),
		Key:       key(taskPK(id), skTask),
		UpdateExpression: aws.String("SET #st = :running, started = if_not_exists(started, :now), lease_owner = :o, " +
			"lease_until = :lu, updated = :now, " + logTerm + " ADD attempts :one"),
		ConditionExpression: aws.String("(#st = :pending OR #st = :running) AND (attribute_not_exists(lease_until) OR lease_until < :nowms) " +
			"AND (attribute_not_exists(not_before) OR not_before <= :nowms)"),
		ExpressionAttributeNames:  map[string]string{"#st": "state", "#log": "log"},
		ExpressionAttributeValues: vals,
		ReturnValues:              types.ReturnValueAllNew,
	})
	if ddb.IsConditionFailed(err) {
		// The task as it is, to tell "finished" from "leased elsewhere".
		cur, gerr := s.LoadTask(ctx, id)
		if gerr != nil {
			return domain.Task{}, gerr
		}
		return cur, ErrLeaseHeld
	}
	if err != nil {
		return domain.Task{}, wrap("claim task", err)
	}
	// The queue's message names the task alone: its account's list is
	// known from the claimed item.
	if err := s.journalWritten(ctx, res.Attributes); err != nil {
		return domain.Task{}, wrap("claim task", err)
	}
	var t domain.Task
	return t, attributevalue.UnmarshalMap(res.Attributes, &t)
}

// ReleaseTask gives up owner's lease of account's task id after a
// retryable failure, recording the error, so that the next delivery may
// claim the task at once.
func (s *Tasks) ReleaseTask(ctx context.Context, account, id, owner, lastError string) error {
	ctx = withLists(ctx, taskPK(id), skTask, tasksGSI(account))
	now := s.now()
	lastError = domain.Clip(lastError, 1000)
	logTerm, vals, err := appendLog(domain.TaskLogLine{Created: now.UTC(), Severity: domain.SeverityWarning, Activity: domain.ActivityRetry, Message: lastError, Process: owner})
	if err != nil {
		return err
	}
	for k, v := range map[string]types.AttributeValue{
		":e": avStr(lastError), ":u": avStr(now.Format(timeLayout)), ":o": avStr(owner), ":running": avStr(domain.TaskRunning),
	} {
		vals[k] = v
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(taskPK(id), skTask),
		UpdateExpression:          aws.String("SET last_error = :e, updated = :u, " + logTerm + " REMOVE lease_until, lease_owner"),
		ConditionExpression:       aws.String("lease_owner = :o AND #st = :running"),
		ExpressionAttributeNames:  map[string]string{"#st": "state", "#log": "log"},
		ExpressionAttributeValues: vals,
	})
	if ddb.IsConditionFailed(err) {
		return ErrLeaseLost
	}
	return wrap("release task", err)
}

// Transition ends the transitional state task holds on application App:
// it becomes To. Restore: To is the state the application came from (the
// task failed), and the task that brought it there stays its StateTask.
type Transition struct {
	App, Task, To string
	Restore       bool
}

// FollowUp is a task a finishing task creates in its own transaction,
// with its held outbox marker (due when the follow-up may run).
type FollowUp struct {
	Task   domain.Task
	Marker OutboxMarker
}

// ConfigChange replaces an application's configuration read at version
// From. Aliases are the new configuration's aliases and FromAliases those
// of the configuration read: the aliases added are claimed and those
// dropped released in the same transaction. Aliases nil leaves the
// aliases and their claims as they are.
type ConfigChange struct {
	Account, App string
	From         int
	Config       string
	Aliases      []string
	FromAliases  []string
}

// Invalidation is a cache invalidation recorded for the data plane: URL
// patterns, or tags, or neither (the whole cache).
type Invalidation struct {
	App     string    `dynamodbav:"app"`
	Task    string    `dynamodbav:"task"`
	URLs    []string  `dynamodbav:"urls,omitempty"`
	Tags    []string  `dynamodbav:"tags,omitempty"`
	Created time.Time `dynamodbav:"created"`
}

// TaskFinish is the final write of a task, with the effects that must
// happen together with it.
type TaskFinish struct {
	// Account is the task's (and its application's): the lists the
	// write changes.
	Account   string
	ID, Owner string // the lease owner that must still hold the task
	State     string // TaskSuccess or TaskFailed
	Message   string
	Result    string // JSON, optional
	// Optional effects, applied in the same transaction.
	Transition   *Transition
	Config       *ConfigChange
	Invalidation *Invalidation
	// FollowUp, with a Transition only: a task to create.
	FollowUp *FollowUp
}

// FinishTask writes a task's outcome, deletes its outbox marker and applies
// its effects in one transaction, so a task's effect happens exactly once
// whatever the redeliveries: ErrLeaseLost when owner no longer holds the
// task, domain.ErrChanged when the application changed under an effect,
// a *domain.Error (AliasTaken) when an alias it adds belongs to another
// application.
func (s *Tasks) FinishTask(ctx context.Context, f TaskFinish) error {
	if f.Account != "" {
		ctx = withLists(ctx, taskPK(f.ID), skTask, tasksGSI(f.Account))
		if f.Transition != nil {
			ctx = withLists(ctx, appPK(f.Transition.App), skApp, appsGSI(f.Account))
		}
	}
	if f.Config != nil {
		ctx = withLists(ctx, appPK(f.Config.App), skApp, appsGSI(f.Config.Account))
	}
	at := s.now()
	now := at.Format(timeLayout)
	msg := domain.Clip(f.Message, 2000)
	sev := domain.SeverityInfo
	if f.State == domain.TaskFailed {
		sev = domain.SeveritySevere
	}
	logTerm, vals, err := appendLog(domain.TaskLogLine{Created: at.UTC(), Severity: sev, Activity: domain.ActivityFinish, Message: f.State + ": " + msg, Process: f.Owner})
	if err != nil {
		return err
	}
	for k, v := range map[string]types.AttributeValue{
		":st": avStr(f.State), ":m": avStr(msg), ":now": avStr(now), ":o": avStr(f.Owner), ":running": avStr(domain.TaskRunning),
	} {
		vals[k] = v
	}
	set := "SET #st = :st, message = :m, completed = :now, updated = :now, " + logTerm
	if f.Result != "" {
		set += ", #res = :r"
		vals[":r"] = avStr(f.Result)
	}
	set += " REMOVE lease_owner, lease_until"
	items := []types.TransactWriteItem{
		{Update: &types.Update{
			TableName:                 aws.String(s.table),
			Key:                       key(taskPK(f.ID), skTask),
			UpdateExpression:          aws.String(set),
			ConditionExpression:       aws.String("lease_owner = :o AND #st = :running"),
			ExpressionAttributeNames:  map[string]string{"#st": "state", "#res": "result", "#log": "log"},
			ExpressionAttributeValues: vals,
		}},
		{Delete: &types.Delete{TableName: aws.String(s.table), Key: key(taskPK(f.ID), skOutbox)}},
	}
	if f.Result == "" {
		delete(items[0].Update.ExpressionAttributeNames, "#res")
	}
	effect := len(items)
	var added []string // aliases claimed, from action effect+1 on
	switch {
	case f.Transition != nil:
		items = append(items, types.TransactWriteItem{Update: s.repos.Applications.endTransition(f.Transition.App, f.Transition.Task, f.Transition.To, f.Transition.Restore)})
	case f.Config != nil:
		u, err := s.repos.Applications.configUpdate(f.Config.Account, f.Config.App, f.Config.From, f.Config.Config, f.Config.Aliases)
		if err != nil {
			return err
		}
		items = append(items, types.TransactWriteItem{Update: u})
		if f.Config.Aliases != nil {
			claims, a, err := s.repos.Applications.aliasChanges(f.Config.Account, f.Config.App, f.Config.FromAliases, f.Config.Aliases)
			if err != nil {
				return err
			}
			items, added = append(items, claims...), a
		}
	case f.Invalidation != nil:
		p, err := s.put(keyAttrs{PK: appPK(f.Invalidation.App), SK: invalidationSK(f.Invalidation.Task), Entity: "invalidation"}, f.Invalidation)
		if err != nil {
			return err
		}
		items = append(items, p)
	}
	if f.FollowUp != nil && f.Transition != nil {
		fu := f.FollowUp
		fu.Marker.place(taskPK(fu.Task.ID), skOutbox, true)
		puts, err := s.puts([]keyAttrsValue{
			{taskKey(fu.Task), fu.Task},
			{fu.Marker.keys("task_outbox"), &fu.Marker},
		})
		if err != nil {
			return err
		}
		items = append(items, puts...)
	}
	err = s.transact(ctx, "finish task", items)
	switch {
	case txConditionFailedAt(err, 0):
		return ErrLeaseLost
	case txConditionFailedAt(err, effect):
		return domain.ErrChanged
	}
	if c := aliasFailure(err, effect+1, added); c != nil {
		return c
	}
	return err
}

// ListInvalidations returns the invalidations recorded for an application
// (what a data plane would read).
func (s *Tasks) ListInvalidations(ctx context.Context, app string) ([]Invalidation, error) {
	items, err := s.query(ctx, "list invalidations", &dynamodb.QueryInput{
		KeyConditionExpression: aws.String("PK = :pk AND begins_with(SK, :sk)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": avStr(appPK(app)), ":sk": avStr(invalidationSK("")),
		},
	}, 0)
	if err != nil {
		return nil, err
	}
	return unmarshalAll[Invalidation](items)
}

// GetCertificateAuthority reads an account's CA.
func (s *Tasks) GetCertificateAuthority(ctx context.Context, account string) (domain.CertificateAuthority, error) {
	var ca domain.CertificateAuthority
	err := s.getItem(ctx, "get certificate authority", caPK(account), "CA", &ca)
	return ca, err
}

// CreateCertificateAuthority stores an account's CA unless it has one
// (*domain.Error: read the existing one, which won the race).
func (s *Tasks) CreateCertificateAuthority(ctx context.Context, ca domain.CertificateAuthority) error {
	p, err := s.put(keyAttrs{PK: caPK(ca.Account), SK: "CA", Entity: "certificate_authority"}, ca)
	if err != nil {
		return err
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: p.Put.TableName, Item: p.Put.Item, ConditionExpression: p.Put.ConditionExpression})
	if ddb.IsConditionFailed(err) {
		return domain.HasCertificateAuthority(ca.Account)
	}
	return wrap("create certificate authority", err)
}
