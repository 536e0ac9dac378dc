// Package events records the validating handlers' denials as Warning
// Events about the denied object, through client-go's broadcaster on a
// rate-limited client of its own, folded as the API server's components
// fold theirs; a stopping replica flushes what it recorded, within a
// bound.
package events
