// Package testns builds Namespace objects for tests.
package testns
