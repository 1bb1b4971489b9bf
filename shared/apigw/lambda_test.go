package apigw

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Every API request's context ends before API Gateway's 29 s integration
// limit, and an earlier deadline of Lambda's is kept.
func TestLambdaContextEndsBeforeTheIntegrationLimit(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var deadline time.Time
	var has bool
	h := Lambda(log, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		deadline, has = r.Context().Deadline()
		w.WriteHeader(http.StatusNoContent)
	}))
	req := events.APIGatewayProxyRequest{HTTPMethod: "GET", Path: "/v2/users", Resource: "/v2/users"}

	start := time.Now()
	if _, err := h(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if !has {
		t.Fatal("the handler's context has no deadline")
	}
	end := time.Now()
	if deadline.After(end.Add(HandlerDeadline)) || deadline.Sub(start) >= 29*time.Second {
		t.Fatalf("deadline %v after the start, want at most %v (below API Gateway's 29 s)", deadline.Sub(start), HandlerDeadline)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	lambdaDeadline, _ := ctx.Deadline()
	if _, err := h(ctx, req); err != nil {
		t.Fatal(err)
	}
	if !deadline.Equal(lambdaDeadline) {
		t.Fatalf("deadline %v, want Lambda's earlier %v", deadline, lambdaDeadline)
	}
}
