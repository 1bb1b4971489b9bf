package bootstrap_test

import (
	"testing"
	"time"

	"cads/infra/sam"
	"cads/shared/bootstrap"
)

// The operator is served as a user whose email the contract types
// format: email: an installation made with the template's default (a
// deployment that does not set OperatorEmail, and the local platform) must
// hold an address clients' validators accept, and one they refuse must
// fail the installation rather than be written.
func TestPlanOperatorEmail(t *testing.T) {
	tpl, err := sam.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	def := tpl.Parameters["OperatorEmail"]
	if def == "" {
		t.Fatal("template.yaml: OperatorEmail has no default")
	}
	plan, _, err := bootstrap.Plan(time.Now, def)
	if err != nil {
		t.Fatalf("the template's default %q: %v", def, err)
	}
	if plan.Operator.Email != def {
		t.Errorf("operator email %q, want %q", plan.Operator.Email, def)
	}
	for _, bad := range []string{"operator@localhost", "", "operator", "@example.com", "a b@example.com", "Op <op@example.com>"} {
		if _, _, err := bootstrap.Plan(time.Now, bad); err == nil {
			t.Errorf("Plan accepted the operator email %q", bad)
		}
	}
}
