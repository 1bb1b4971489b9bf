package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"cads/shared/domain"
	"cads/shared/store"
)

func runMarker(id string) *store.OutboxMarker {
	return &store.OutboxMarker{Queue: "TestRunsQueue", Body: `{"run":"` + id + `"}`, Due: time.Now().Add(time.Minute)}
}

// dueBodies is every due marker (an hour ahead), by body.
func dueBodies(t *testing.T, st *store.Store) map[string]store.OutboxMarker {
	t.Helper()
	due, err := st.Tasks.DueOutbox(context.Background(), time.Now().Add(time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.OutboxMarker{}
	for _, m := range due {
		out[m.Body] = m
	}
	return out
}

// Markers of every kind share one due-time index: written in the
// business write's transaction (not at all when it fails), not held when
// their sender deletes them, replaced when the write owes its message
// again, and deleted only as read (a sweep's move or a replacement wins).
func TestOutboxMarkersOfEveryKind(t *testing.T) {
	st, r := rbacFixture(t)
	ctx := context.Background()
	now := st.Now()
	inv := domain.Invitation{AccountID: "a1", ID: "i1", Kind: domain.InvitationRole, Email: "u@example.com", Target: r.ID,
		State: domain.InvitationQueued, Created: now, Updated: now}
	m := store.OutboxMarker{Queue: "NotificationsQueue", Body: "invite i1", Due: now.Add(time.Minute)}
	if err := st.Invitations.CreateInvitation(ctx, inv, &m); err != nil {
		t.Fatal(err)
	}
	if !m.Placed() || m.Held {
		t.Fatalf("invitation marker after the write: %+v; want placed, not held", m)
	}
	// A failed write leaves no marker: the role does not exist.
	bad := inv
	bad.ID, bad.Target = "i2", "no-such-role"
	if err := st.Invitations.CreateInvitation(ctx, bad, &store.OutboxMarker{Queue: "NotificationsQueue", Body: "invite i2", Due: now}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("invitation to a missing role: %v", err)
	}
	tk := domain.Task{ID: "t1", Account: "a1", Type: "start", State: domain.TaskPending, CreatedBy: "u1", Created: now, Updated: now}
	if err := st.Tasks.CreateTask(ctx, tk, &store.OutboxMarker{Queue: "TasksQueue", Body: "task t1", Due: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	due := dueBodies(t, st)
	if len(due) != 2 || due["invite i1"].Queue != "NotificationsQueue" || due["invite i1"].Held || !due["task t1"].Held {
		t.Fatalf("due markers: %+v", due)
	}
	if _, err := st.Tasks.DeleteOutbox(ctx, due["task t1"]); err == nil {
		t.Fatal("a held marker was the sender's to delete")
	}

	// A sweep moved the marker after the producer read it: the
	// producer's delete leaves it (the sweep sent the message again).
	read := due["invite i1"]
	moved := read
	if ok, err := st.Tasks.PostponeOutbox(ctx, &moved, now.Add(2*time.Minute)); err != nil || !ok {
		t.Fatalf("postpone: %v %v", ok, err)
	}
	if ok, err := st.Tasks.DeleteOutbox(ctx, read); err != nil || ok {
		t.Fatalf("delete as read before the move: %v %v; want kept", ok, err)
	}
	// A re-send replaces the marker: the earlier one's delete leaves it.
	inv, err := st.Invitations.RequeueInvitation(ctx, inv, &store.OutboxMarker{Queue: "NotificationsQueue", Body: "invite i1 again", Due: now.Add(3 * time.Minute)})
	if err != nil || inv.State != domain.InvitationQueued {
		t.Fatalf("requeue: %+v %v", inv, err)
	}
	if ok, err := st.Tasks.DeleteOutbox(ctx, moved); err != nil || ok {
		t.Fatalf("delete of the replaced marker: %v %v; want kept", ok, err)
	}
	due = dueBodies(t, st)
	again, ok := due["invite i1 again"]
	if len(due) != 2 || !ok {
		t.Fatalf("after the re-send: %+v", due)
	}
	if ok, err := st.Tasks.DeleteOutbox(ctx, again); err != nil || !ok {
		t.Fatalf("delete as read: %v %v", ok, err)
	}
	if due = dueBodies(t, st); len(due) != 1 {
		t.Fatalf("after the delete: %+v", due)
	}
	// The task's marker goes with its outcome.
	if _, err := st.Tasks.ClaimTask(ctx, "t1", "w1", now, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := st.Tasks.FinishTask(ctx, store.TaskFinish{ID: "t1", Owner: "w1", State: domain.TaskSuccess}); err != nil {
		t.Fatal(err)
	}
	if due = dueBodies(t, st); len(due) != 0 {
		t.Fatalf("after the task finished: %+v", due)
	}
}
