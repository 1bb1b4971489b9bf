// Package clientgen checks that the API's contract (shared/openapi, served
// at GET /v2/openapi.json) is one that mainstream client generators take
// whole: ogen and oapi-codegen, at the versions pinned by the tools module
// (infra/clientgen/tools), generate a client for every operation of the
// document as served, without a warning, and the code they generate
// compiles; a scenario with the generated ogen client then calls every
// operation of the document through the local gateway and decodes each
// answer with the generated types. openapi-typescript, at the version
// testdata/ts pins, generates TypeScript types from the same document,
// and an openapi-fetch program compiles against them. The generators and
// what they generate are test-only: they live in modules of their own,
// which nothing of the service imports. docs/api.md, "API description".
package clientgen
