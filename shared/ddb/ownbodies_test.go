package ddb

import (
	"testing"
)

// The table's client is built with OwnBodies (infra/localaws's
// TestLocalClientSurvivesAnswerBeforeWriteLoopEnds shows what it prevents).
func TestNewClientOwnsRequestBodies(t *testing.T) {
	t.Setenv("AWS_REGION", "eu-west-1")
	c, err := NewClient(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Options().HTTPClient.(ownBodies); !ok {
		t.Fatalf("the client's HTTP client is %T, not one that owns request bodies", c.Options().HTTPClient)
	}
}
