// Package repotest holds tests about the repository as a whole rather than
// about one package: that it explains itself (no file names a document
// outside the repository; see docs/api.md) and that its docs cannot drift
// from the code: every heading a pointer names exists, every `pkg.Ident`
// a doc names is declared, and docs/deploy.md's cost estimate is the
// arithmetic of docs/performance.md's cost table.
package repotest
