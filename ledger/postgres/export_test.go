package postgres

// Aliases of unexported helpers for the external tests of this package.
var (
	ResolveClick     = resolveClick
	CustomerForClick = customerForClick
	CustomerByKey    = customerByKey
)
