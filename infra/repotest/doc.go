// Package repotest holds tests about the repository as a whole rather than
// about one package: today, that it explains itself (no file names a
// document outside the repository; see docs/api.md).
package repotest
