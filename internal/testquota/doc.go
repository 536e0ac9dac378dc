// Package testquota builds ResourceQuota objects for tests.
package testquota
