package store

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"cads/shared/ddb"
	"cads/shared/domain"
)

const prefixPageControl = "PAGECONTROL#"

// Zero-padded numbers keep "PAGECONTROL#0000000001" from being a prefix of
// control 10's items, so one begins_with reads a control and its history.
func pageControlSK(id int) string { return fmt.Sprintf("%s%010d", prefixPageControl, id) }
func pageControlVersionSK(id, version int) string {
	return fmt.Sprintf("%s#V%010d", pageControlSK(id), version)
}

// NextPageControlID draws the next id from the application's sequence; the
// application must belong to account (domain.ErrNotFound otherwise).
func (s *Applications) NextPageControlID(ctx context.Context, account, app string) (int, error) {
	res, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key(appPK(app), skApp),
		UpdateExpression:          aws.String("ADD pagecontrol_seq :one"),
		ConditionExpression:       aws.String("account = :acct"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": avNum(1), ":acct": avStr(account)},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if ddb.IsConditionFailed(err) {
		return 0, domain.ErrNotFound
	}
	if err != nil {
		return 0, wrap("next page control id", err)
	}
	var out struct {
		Seq int `dynamodbav:"pagecontrol_seq"`
	}
	if err := attributevalue.UnmarshalMap(res.Attributes, &out); err != nil || out.Seq == 0 {
		return 0, fmt.Errorf("next page control id: no sequence value returned (%v)", err)
	}
	return out.Seq, nil
}

// CreatePageControl writes version 1 of a page control, if its
// application has room in its page controls quota (domain.QuotaReached
// otherwise; counted per application in the same transaction).
func (s *Applications) CreatePageControl(ctx context.Context, account string, pc domain.PageControl) error {
	p, err := s.put(keyAttrs{PK: appPK(pc.App), SK: pageControlSK(pc.ID), Entity: "page_control"}, pc)
	if err != nil {
		return err
	}
	q, err := s.quotaOf(ctx, account, domain.ResourcePageControls)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "create page control", []types.TransactWriteItem{p, s.appInAccount(account, pc.App), s.usageOpAt(appPK(pc.App), q, 1)})
	switch {
	case txConditionFailedAt(err, 1):
		return domain.ErrNotFound
	case txConditionFailedAt(err, 2):
		return domain.QuotaReached(account, q, strconv.Itoa(q.Limit))
	case txConditionFailedAt(err, 0):
		return domain.Duplicate("page control", strconv.Itoa(pc.ID), "")
	}
	return err
}

// GetPageControl reads a page control with its history (one Query, in
// parallel with the application check).
func (s *Applications) GetPageControl(ctx context.Context, account, app string, id int) (domain.PageControlVersions, error) {
	items, err := s.childrenOf(ctx, account, app, pageControlSK(id))
	if err != nil {
		return domain.PageControlVersions{}, err
	}
	all, err := groupPageControls(items)
	if err != nil {
		return domain.PageControlVersions{}, err
	}
	if len(all) == 0 {
		return domain.PageControlVersions{}, domain.ErrNotFound
	}
	return all[0], nil
}

func groupPageControls(items []map[string]types.AttributeValue) ([]domain.PageControlVersions, error) {
	byID := map[int]*domain.PageControlVersions{}
	current := map[int]bool{}
	for _, it := range items {
		var pc domain.PageControl
		if err := attributevalue.UnmarshalMap(it, &pc); err != nil {
			return nil, fmt.Errorf("page control: unmarshal: %w", err)
		}
		v := byID[pc.ID]
		if v == nil {
			v = &domain.PageControlVersions{}
			byID[pc.ID] = v
		}
		sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
		if sk != nil && !strings.Contains(strings.TrimPrefix(sk.Value, prefixPageControl), "#") {
			v.Current, current[pc.ID] = pc, true
		} else {
			v.History = append(v.History, pc)
		}
	}
	out := make([]domain.PageControlVersions, 0, len(byID))
	for id, v := range byID {
		// History left behind by an interrupted delete is not a control.
		if !current[id] {
			continue
		}
		sort.Slice(v.History, func(i, j int) bool { return v.History[i].Version < v.History[j].Version })
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Current.ID < out[j].Current.ID })
	return out, nil
}

// UpdatePageControl replaces the current version old with next (whose
// Version must be old.Version+1) and keeps old in the history, in one
// transaction: a concurrent edit is domain.ErrChanged.
func (s *Applications) UpdatePageControl(ctx context.Context, account string, old, next domain.PageControl) error {
	cur, err := s.put(keyAttrs{PK: appPK(next.App), SK: pageControlSK(next.ID), Entity: "page_control"}, next)
	if err != nil {
		return err
	}
	cur.Put.ConditionExpression = aws.String("version = :v")
	cur.Put.ExpressionAttributeValues = map[string]types.AttributeValue{":v": avNum(int64(old.Version))}
	hist, err := s.put(keyAttrs{PK: appPK(old.App), SK: pageControlVersionSK(old.ID, old.Version), Entity: "page_control_version"}, old)
	if err != nil {
		return err
	}
	err = s.transact(ctx, "update page control", []types.TransactWriteItem{cur, hist, s.appInAccount(account, next.App)})
	switch {
	case txConditionFailedAt(err, 2):
		return domain.ErrNotFound
	case txConditionFailedAt(err, 0), txConditionFailedAt(err, 1):
		return domain.ErrChanged
	}
	return err
}

// DeletePageControl deletes a page control read at version from, then its
// history (unreachable once the current version is gone).
func (s *Applications) DeletePageControl(ctx context.Context, account string, pc domain.PageControlVersions) error {
	err := s.transact(ctx, "delete page control", []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName:                 aws.String(s.table),
			Key:                       key(appPK(pc.Current.App), pageControlSK(pc.Current.ID)),
			ConditionExpression:       aws.String("version = :v"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": avNum(int64(pc.Current.Version))},
		}},
		s.appInAccount(account, pc.Current.App),
		s.usageOpAt(appPK(pc.Current.App), domain.Quota{Kind: domain.ResourcePageControls}, -1),
	})
	switch {
	case txConditionFailedAt(err, 1):
		return domain.ErrNotFound
	case txConditionFailedAt(err, 0):
		return domain.ErrChanged
	case err != nil:
		return err
	}
	reqs := make([]types.WriteRequest, 0, len(pc.History))
	for _, h := range pc.History {
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: key(appPK(h.App), pageControlVersionSK(h.ID, h.Version))}})
	}
	return wrap("delete page control history", ddb.BatchWrite(ctx, s.db, s.table, reqs))
}

// PageControlPosition is a page control's position in its application's
// collection (id order): the zero-padded id, as its sort key holds it.
func PageControlPosition(id int) string { return fmt.Sprintf("%010d", id) }

// ValidPageControlPosition reports whether p has the shape of a
// PageControlPosition (it comes back from clients inside cursors).
func ValidPageControlPosition(p string) bool {
	if len(p) != 10 {
		return false
	}
	for _, c := range p {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// PagePageControls reads page controls of an application after position
// after (PageControlPosition; "" from the first) in id order (desc:
// highest id first), with their positions and whether more may follow:
// one Query of at most n items, current versions and history alike (a
// control's items sort together: its current version, then its earlier
// ones), with the application check beside it (its error wins: a missing
// application is a 404 whatever the Query found). A control is returned
// only whole: one the Query cut is left for the next read, unless it is
// the first, which one more Query, limited to the items it still lacks
// (its version says how many), completes. History left behind by an
// interrupted delete is returned as a member without a current version
// (Current.ID 0): a caller hides it, and going on after its position
// passes the rest of it, so it costs the read budget, never a silent cut.
// withHistory says whether the history is kept on the controls returned.
func (s *Applications) PagePageControls(ctx context.Context, account, app, after string, desc bool, n int, withHistory bool) ([]domain.PageControlVersions, []string, bool, error) {
	var appCheck errgroup.Group
	appCheck.Go(func() error { _, err := s.GetApplication(ctx, account, app); return err })
	// Every sort key of a control and its history lies between
	// PAGECONTROL#<id> and PAGECONTROL#<id>#~; "~" sorts after every digit
	// and after "#V".
	lo, hi := prefixPageControl, prefixPageControl+"~"
	if after != "" {
		if desc {
			// Up to the last item of the control before it (BETWEEN is
			// inclusive).
			id, err := strconv.Atoi(after)
			if err != nil || id < 1 {
				return nil, nil, false, appCheck.Wait()
			}
			hi = prefixPageControl + PageControlPosition(id-1) + "#~"
		} else {
			lo = prefixPageControl + after + "#~"
		}
	}
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("PK = :pk AND SK BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": avStr(appPK(app)), ":lo": avStr(lo), ":hi": avStr(hi)},
		ScanIndexForward:          aws.Bool(!desc),
		Limit:                     aws.Int32(int32(max(n, 1))),
		ConsistentRead:            aws.Bool(true),
	}
	var r pageControlRead
	out, err := s.db.Query(ctx, in)
	if err == nil {
		err = r.add(out.Items)
	}
	more := err == nil && len(out.LastEvaluatedKey) > 0
	if more && len(r.groups) > 0 {
		last := r.groups[len(r.groups)-1]
		switch need := last.lacks(desc, withHistory); {
		case need == 0:
		case len(r.groups) > 1:
			// Cut by the Limit: the next read starts before it.
			r.groups = r.groups[:len(r.groups)-1]
		default:
			in.ExclusiveStartKey, in.Limit = out.LastEvaluatedKey, aws.Int32(int32(need))
			if out, err = s.db.Query(ctx, in); err == nil {
				err = r.add(out.Items)
				more = len(out.LastEvaluatedKey) > 0 || len(r.groups) > 1
				r.groups = r.groups[:1]
			}
		}
	}
	if appErr := appCheck.Wait(); appErr != nil {
		return nil, nil, false, appErr
	}
	if err != nil {
		return nil, nil, false, wrap("list page controls", err)
	}
	vs := make([]domain.PageControlVersions, len(r.groups))
	pos := make([]string, len(r.groups))
	for i, g := range r.groups {
		if g.cur != nil {
			vs[i].Current = *g.cur
			if withHistory {
				sort.Slice(g.hist, func(a, b int) bool { return g.hist[a].Version < g.hist[b].Version })
				vs[i].History = g.hist
			}
		}
		pos[i] = PageControlPosition(g.id)
	}
	return vs, pos, more, nil
}

// pageControlRead groups a page's items by control, in the order read.
type pageControlRead struct {
	groups []*pageControlGroup
}

type pageControlGroup struct {
	id   int
	cur  *domain.PageControl
	hist []domain.PageControl
	// top is the highest version of history read.
	top int
}

// add groups items read after those added before.
func (r *pageControlRead) add(items []map[string]types.AttributeValue) error {
	for _, it := range items {
		sk, _ := it[AttrSK].(*types.AttributeValueMemberS)
		if sk == nil {
			continue
		}
		idPart, _, isHist := strings.Cut(strings.TrimPrefix(sk.Value, prefixPageControl), "#")
		id, err := strconv.Atoi(idPart)
		if err != nil {
			return fmt.Errorf("page control item %q: %w", sk.Value, err)
		}
		var pc domain.PageControl
		if err := attributevalue.UnmarshalMap(it, &pc); err != nil {
			return fmt.Errorf("page control: unmarshal: %w", err)
		}
		if len(r.groups) == 0 || r.groups[len(r.groups)-1].id != id {
			r.groups = append(r.groups, &pageControlGroup{id: id})
		}
		g := r.groups[len(r.groups)-1]
		if isHist {
			g.hist = append(g.hist, pc)
			g.top = max(g.top, pc.Version)
		} else {
			g.cur = &pc
		}
	}
	return nil
}

// lacks is how many more items the last control of a Query cut by its
// Limit needs to be whole (0: it is). A control at version v has the
// history items of versions 1 to v-1, written by the transactions that
// made the later ones: ascending, its current version comes first, so
// v-1 history items complete it (none are needed without history);
// descending, its history comes first, highest version first, so the
// current version ends it.
func (g *pageControlGroup) lacks(desc, withHistory bool) int {
	switch {
	case desc && g.cur != nil:
		return 0
	case desc:
		// History of versions top down to 1, then the current one.
		return max(1, g.top+1-len(g.hist))
	case g.cur == nil:
		// History without its control, ascending: going on after its
		// position passes the rest of it.
		return 0
	case !withHistory:
		return 0
	}
	return max(0, g.cur.Version-1-len(g.hist))
}
