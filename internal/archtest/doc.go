// Package archtest holds the repository's import policy as a test: the
// arrows between this module's packages that docs/architecture.md states,
// and the libraries the core packages keep out. A new import that the
// policy does not allow fails the test, which names it; the fix is either
// to remove the import or to add the arrow here and to the document, in the
// same change. It also holds the document's table of packages to the code:
// every package described, and each row's imports of ours exactly what its
// packages import; and docs/contracts.md's table of metrics to the react_
// names the code defines, both ways. The package has no code of its own.
package archtest
