package sam_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"cads/infra/sam"
	"cads/infra/testenv"
)

// The released template is the baseline of the next deployment: the table
// of template.yaml must be reachable from it in one stack update
// (docs/deploy.md, "Schema changes"). `make release-baseline` copies
// template.yaml there when a release ships.
func TestTemplateTableChangeDeploysFromTheRelease(t *testing.T) {
	released, err := sam.Load(filepath.Join(testenv.Root(t), "infra", "release", "template.yaml"))
	if err != nil {
		t.Fatalf("the released template: %v", err)
	}
	next := testenv.Template(t)
	if len(next.Tables) != len(released.Tables) {
		t.Fatalf("template.yaml declares %d tables, the release %d", len(next.Tables), len(released.Tables))
	}
	for id, tb := range next.Tables {
		was, ok := released.Tables[id]
		if !ok {
			t.Fatalf("table %s is not in the released template", id)
		}
		if err := sam.CheckTableChange(was, tb); err != nil {
			t.Errorf("template.yaml cannot be deployed over the release:\n%v", err)
		}
	}

	// A stack from before GSI2 and GSI3 cannot take template.yaml in one
	// deployment; with GSI2 first, it can (docs/deploy.md).
	tb := next.Tables["Table"]
	without := func(names ...string) sam.Table {
		old := tb
		old.GlobalSecondaryIndexes = nil
		for _, g := range tb.GlobalSecondaryIndexes {
			if !slices.Contains(names, g.IndexName) {
				old.GlobalSecondaryIndexes = append(old.GlobalSecondaryIndexes, g)
			}
		}
		return old
	}
	if err := sam.CheckTableChange(without("GSI2", "GSI3"), tb); err == nil {
		t.Error("template.yaml over a stack without GSI2 and GSI3: accepted")
	}
	if err := sam.CheckTableChange(without("GSI2", "GSI3"), without("GSI3")); err != nil {
		t.Errorf("the first of the two deployments (GSI2): %v", err)
	}
	if err := sam.CheckTableChange(without("GSI3"), tb); err != nil {
		t.Errorf("the second of the two deployments (GSI3): %v", err)
	}
}

// fixtureTable is a Table resource with the given GSIs, each written as
// "name" (keyed on <name>PK/<name>SK, ALL) or "name:hash[:projection]".
func fixtureTable(t *testing.T, gsis ...string) sam.Table {
	t.Helper()
	var attrs, idx strings.Builder
	attrs.WriteString("        - { AttributeName: PK, AttributeType: S }\n        - { AttributeName: SK, AttributeType: S }\n")
	for _, g := range gsis {
		parts := strings.Split(g, ":")
		name, hash, proj := parts[0], parts[0]+"PK", "ALL"
		if len(parts) > 1 {
			hash = parts[1]
		}
		if len(parts) > 2 {
			proj = parts[2]
		}
		attrs.WriteString("        - { AttributeName: " + hash + ", AttributeType: S }\n")
		idx.WriteString("        - IndexName: " + name + "\n          KeySchema:\n            - { AttributeName: " + hash + ", KeyType: HASH }\n" +
			"          Projection:\n            ProjectionType: " + proj + "\n")
	}
	y := "Resources:\n  Table:\n    Type: AWS::DynamoDB::Table\n    Properties:\n      BillingMode: PAY_PER_REQUEST\n      AttributeDefinitions:\n" + attrs.String() +
		"      KeySchema:\n        - { AttributeName: PK, KeyType: HASH }\n        - { AttributeName: SK, KeyType: RANGE }\n"
	if len(gsis) > 0 {
		y += "      GlobalSecondaryIndexes:\n" + idx.String()
	}
	tpl, err := sam.Parse([]byte(y))
	if err != nil {
		t.Fatalf("fixture %v: %v\n%s", gsis, err, y)
	}
	return tpl.Tables["Table"]
}

func TestCheckTableChange(t *testing.T) {
	for _, c := range []struct {
		name           string
		released, next []string
		want           string // "" = deployable; else a part of the error
	}{
		{"nothing changes", []string{"GSI1"}, []string{"GSI1"}, ""},
		{"one index added", []string{"GSI1"}, []string{"GSI1", "GSI2"}, ""},
		{"one index removed", []string{"GSI1", "GSI2"}, []string{"GSI1"}, ""},
		{"indexes reordered", []string{"GSI1", "GSI2"}, []string{"GSI2", "GSI1"}, ""},
		{"the first index", nil, []string{"GSI1"}, ""},
		{"two indexes added (GSI2 and GSI3 in one change)", []string{"GSI1"}, []string{"GSI1", "GSI2", "GSI3"}, "one global secondary index per table update"},
		{"one added, one removed", []string{"GSI1", "GSI2"}, []string{"GSI1", "GSI3"}, "one global secondary index per table update"},
		{"two removed", []string{"GSI1", "GSI2", "GSI3"}, []string{"GSI1"}, "one global secondary index per table update"},
		{"a key schema changes", []string{"GSI1"}, []string{"GSI1:OTHERPK"}, "index GSI1 changes its key schema"},
		{"a projection changes", []string{"GSI1"}, []string{"GSI1:GSI1PK:KEYS_ONLY"}, "index GSI1 changes its projection"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := sam.CheckTableChange(fixtureTable(t, c.released...), fixtureTable(t, c.next...))
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Errorf("accepted, want an error naming %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Errorf("error %q does not say %q", err, c.want)
			}
		})
	}

	// The table's own key schema and a key attribute's type.
	base := fixtureTable(t, "GSI1")
	rekeyed := base
	rekeyed.KeySchema = []sam.KeyElement{{AttributeName: "PK", KeyType: "HASH"}}
	if err := sam.CheckTableChange(base, rekeyed); err == nil || !strings.Contains(err.Error(), "replaces the table") {
		t.Errorf("a new table key schema: %v", err)
	}
	retyped := base
	retyped.AttributeDefinitions = append([]sam.AttributeDefinition{{AttributeName: "GSI1PK", AttributeType: "N"}}, base.AttributeDefinitions...)
	if err := sam.CheckTableChange(base, retyped); err == nil || !strings.Contains(err.Error(), "changes type") {
		t.Errorf("a key attribute's new type: %v", err)
	}
}
