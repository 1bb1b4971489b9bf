package local_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"cads/infra/local"
	"cads/infra/testenv"
	"cads/shared/bootstrap"
	"cads/shared/wire"
)

// TestReplayEvents sends every sample event in events/ to its function, as
// API Gateway would (through JSON), and checks the answer in <name>.expect.
func TestReplayEvents(t *testing.T) {
	root := testenv.Root(t)
	d := testenv.NewDynamo(t)
	deps := wire.New(slog.New(slog.NewTextHandler(testLog{t}, nil)), d.Client, d.Table)
	res, err := bootstrap.Run(context.Background(), deps.Store, "operator@example.com")
	if err != nil {
		t.Fatal(err)
	}
	fill := strings.NewReplacer("{{operator}}", res.Operator, "{{key}}", res.KeyID, "{{secret}}", res.Secret, "{{root}}", res.RootAccount)

	files, _ := filepath.Glob(filepath.Join(root, "events", "*", "*.json"))
	if len(files) == 0 {
		t.Fatal("no sample events")
	}
	for _, f := range files {
		fn := "functions/" + filepath.Base(filepath.Dir(f))
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		t.Run(filepath.Base(filepath.Dir(f))+"/"+name, func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(strings.TrimSuffix(f, ".json") + ".expect")
			if err != nil {
				t.Fatalf("no .expect beside the event: %v", err)
			}
			c, ok := local.Functions[fn]
			if !ok {
				t.Fatalf("no function %s for events of that folder", fn)
			}
			body := []byte(fill.Replace(string(raw)))
			ctx := context.Background()
			switch {
			case c.API != nil:
				var ev events.APIGatewayProxyRequest
				if err := json.Unmarshal(body, &ev); err != nil {
					t.Fatal(err)
				}
				resp, err := c.API(deps)(ctx, ev)
				if err != nil {
					t.Fatalf("function error: %v", err)
				}
				if got := strings.TrimSpace(string(want)); got != itoa(resp.StatusCode) {
					t.Fatalf("status %d, want %s: %s", resp.StatusCode, got, resp.Body)
				}
			case c.Authorizer != nil:
				var ev events.APIGatewayCustomAuthorizerRequestTypeRequest
				if err := json.Unmarshal(body, &ev); err != nil {
					t.Fatal(err)
				}
				resp, err := c.Authorizer(deps)(ctx, ev)
				got := "Unauthorized"
				if err == nil {
					got = resp.PolicyDocument.Statement[0].Effect
				} else if err.Error() != "Unauthorized" {
					t.Fatalf("authorizer error: %v", err)
				}
				if got != strings.TrimSpace(string(want)) {
					t.Fatalf("authorizer said %s, want %s (context %v)", got, want, resp.Context)
				}
			default:
				t.Fatalf("%s has no replayable handler", fn)
			}
		})
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
