package policy

import (
	"bytes"
	_ "embed"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/util"
)

// inputSchema is the JSON Schema of the input document (gpuadmit.io/v1alpha1
// PolicyInput, docs/policy-input.md). Every object in it is closed, so the
// compiler's type checker turns a reference to a field that does not exist
// (input.namspace, input.demand.effectiv) into a compile error naming the
// file, line and field.
//
//go:embed input.schema.json
var inputSchema []byte

// InputSchema returns the JSON Schema of the input document.
func InputSchema() []byte { return bytes.Clone(inputSchema) }

// schemaSet returns the schemas policies are type-checked against: the
// input schema at the input root.
func schemaSet() (*ast.SchemaSet, error) {
	var doc any
	if err := util.Unmarshal(inputSchema, &doc); err != nil {
		return nil, fmt.Errorf("the input document's JSON Schema: %w", err)
	}
	ss := ast.NewSchemaSet()
	ss.Put(ast.SchemaRootRef, doc)
	return ss, nil
}
